"""The small classifier that the restart workers train (``resume.py``, ``restart_train.py``):
one seed, one data rule and one model, so that an interrupted run and an uninterrupted one
compare weight for weight."""
import numpy as np

import hiapi
from hiapi import layers


def build(samples, per_worker=False):
    """``(strategy, model, x, y)``: ``samples`` rows (per worker with ``per_worker``) of 6
    features labelled by ``x0 > x2``; Dense-Dropout-Dense compiled in the strategy's scope."""
    hiapi.utils.set_random_seed(4)
    strategy = hiapi.distribute.Strategy()
    rng = np.random.default_rng(0)
    x = rng.normal(size=(samples * (strategy.size if per_worker else 1), 6)).astype(np.float32)
    y = (x[:, 0] - x[:, 2] > 0).astype(int)
    with strategy.scope():
        model = hiapi.Sequential([hiapi.Input(shape=(6,)), layers.Dense(8, activation="tanh"),
                                  layers.Dropout(0.2), layers.Dense(2, activation="softmax")])
        model.compile(optimizer=hiapi.optimizers.SGD(0.1, momentum=0.9), metrics=["accuracy"],
                      loss="sparse_categorical_crossentropy")
    return strategy, model, x, y
