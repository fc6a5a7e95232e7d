"""Keras's lowercase functional forms of the merge layers: ``layers.add([a, b])`` builds an
``Add`` layer and calls it, the same node as ``layers.Add()([a, b])``::

    x = layers.add([x, residual])
    x = layers.concatenate([left, right], axis=-1)
"""
from hiapi.layers.dot import Dot
from hiapi.layers.merge import Add, Average, Concatenate, Maximum, Minimum, Multiply, Subtract


def add(inputs, **kwargs):
    return Add(**kwargs)(inputs)


def subtract(inputs, **kwargs):
    return Subtract(**kwargs)(inputs)


def multiply(inputs, **kwargs):
    return Multiply(**kwargs)(inputs)


def average(inputs, **kwargs):
    return Average(**kwargs)(inputs)


def maximum(inputs, **kwargs):
    return Maximum(**kwargs)(inputs)


def minimum(inputs, **kwargs):
    return Minimum(**kwargs)(inputs)


def concatenate(inputs, axis=-1, **kwargs):
    return Concatenate(axis=axis, **kwargs)(inputs)


def dot(inputs, axes=-1, normalize=False, **kwargs):
    return Dot(axes=axes, normalize=normalize, **kwargs)(inputs)
