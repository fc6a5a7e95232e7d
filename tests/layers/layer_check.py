"""``check_layer``: the one harness the new-layer tests go through (Keras's layer-test habit).

For a layer factory and an input batch it checks: the weights' names and shapes (Keras's
layout, so parameter counts match ``keras`` and Keras weights load), the forward output
against a numpy reference given the layer's weights, that ``get_config`` is JSON-serialisable
and rebuilds an equal layer that computes the same output with the same weights, and a
training step: in a small model under ``fit``'s ``train_on_batch``, the loss is finite and
every trainable weight of the layer moves.
"""
import json

import numpy as np

import hiapi
from hiapi import layers


def check_layer(make, x, reference=None, weights=(), *, rtol=1e-5, atol=1e-5, train=True):
    """``make()`` builds the layer; ``reference(x, *weights)`` is the expected inference
    output; ``weights`` lists (name, shape) in Keras's order. Returns (layer, output)."""
    layer = make()
    y = layer(x)
    assert [(w.name.split("/")[-1], w.shape) for w in layer.weights] == list(weights), \
        [(w.name, w.shape) for w in layer.weights]
    if reference is not None:
        expected = reference(x, *layer.get_weights())
        assert y.shape == expected.shape, (y.shape, expected.shape)
        np.testing.assert_allclose(y, expected, rtol=rtol, atol=atol)
    config = layer.get_config()
    assert json.loads(json.dumps(config)) is not None
    clone = type(layer).from_config(config)
    assert clone.get_config() == config
    clone_y = clone(x)
    if layer.weights:
        clone.set_weights(layer.get_weights())
        clone_y = clone(x)
    np.testing.assert_allclose(clone_y, y, rtol=1e-6, atol=1e-6)
    if train:
        _check_training_step(make, x)
    return layer, y


def _check_training_step(make, x):
    layer = make()
    model = hiapi.Sequential([hiapi.Input(x.shape[1:]), layer, layers.Flatten(),
                              layers.Dense(1)])
    model.compile(optimizer=hiapi.optimizers.SGD(0.01), loss="mse")
    before = [w.numpy() for w in layer.trainable_weights]
    target = np.random.default_rng(0).normal(size=(len(x), 1)).astype(np.float32)
    for _ in range(2):
        loss = model.train_on_batch(x, target)
        assert np.isfinite(loss), f"{type(layer).__name__}: loss {loss}"
    for variable, old in zip(layer.trainable_weights, before):
        assert not np.array_equal(variable.numpy(), old), f"{variable.name} did not train"
