"""hiapi: a Keras-like deep-learning library built on a symbolic graph compiler.

    import hiapi
    from hiapi import layers
    model = hiapi.Sequential([hiapi.Input(shape=(784,)), layers.Dense(10, activation="softmax")])
    model.compile(optimizer=hiapi.optimizers.SGD(0.1), loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
"""
from hiapi._version import __version__, version  # noqa: F401  (package metadata)

from hiapi.runtime import threads  # noqa: F401  (first: it sets OpenBLAS up before numpy loads it)
from hiapi.runtime import timeline  # noqa: F401  (hiapi.threads, hiapi.timeline: as before)
from hiapi import random  # noqa: F401
from hiapi import backends, graph  # noqa: F401
from hiapi import config  # noqa: F401
from hiapi import activations, initializers, losses, metrics, utils  # noqa: F401
from hiapi import backend, ops, tree  # noqa: F401
from hiapi import layers, optimizers, callbacks, models, saving, datasets, distribute  # noqa
from hiapi import dtype_policy as dtype_policies, mixed_precision  # noqa: F401
from hiapi.layers import Input  # noqa: F401
from hiapi.models import Model, Sequential  # noqa: F401
from hiapi.graph.gradient_tape import GradientTape  # noqa: F401
from hiapi.models.traced_function import function  # noqa: F401
from hiapi.graph import Variable  # noqa: F401  (keras.Variable)

threads.apply()
