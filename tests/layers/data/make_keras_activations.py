"""Writes keras_activations.npz: inputs, weights and outputs of Keras 3's activation layers
(ReLU, LeakyReLU, ELU, PReLU, Softmax with and without a mask), which
tests/layers/test_advanced_activations.py compares hiapi's layers against.

Run by hand where Keras is installed (not a test dependency):
    KERAS_BACKEND=jax python tests/layers/data/make_keras_activations.py
"""
import pathlib

import numpy as np

import keras
from keras import layers

rng = np.random.default_rng(0)
x = rng.normal(scale=2.0, size=(3, 4, 5)).astype("float32")
mask = rng.random((3, 4, 5)) > 0.3
CASES = {
    "relu": (layers.ReLU(), {}),
    "relu_clipped": (layers.ReLU(max_value=1.0, negative_slope=0.1, threshold=0.5), {}),
    "leaky_relu": (layers.LeakyReLU(), {}),
    "leaky_relu_0.1": (layers.LeakyReLU(negative_slope=0.1), {}),
    "elu": (layers.ELU(), {}),
    "elu_0.5": (layers.ELU(alpha=0.5), {}),
    "prelu": (layers.PReLU(), {}),
    "prelu_shared": (layers.PReLU(shared_axes=[1]), {}),
    "softmax": (layers.Softmax(), {}),
    "softmax_axis1": (layers.Softmax(axis=1), {}),
    "softmax_masked": (layers.Softmax(), {"mask": mask}),
}
out = {"keras_version": np.array(keras.__version__), "x": x, "mask": mask}
for name, (layer, kwargs) in CASES.items():
    layer.build(x.shape)
    weights = [rng.normal(size=w.shape).astype("float32") for w in layer.get_weights()]
    layer.set_weights(weights)
    out[f"{name}/y"] = np.asarray(layer(x, **kwargs))
    for i, w in enumerate(weights):
        out[f"{name}/w{i}"] = w
np.savez(pathlib.Path(__file__).with_name("keras_activations.npz"), **out)
print(f"wrote keras_activations.npz with Keras {keras.__version__}")
