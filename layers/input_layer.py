"""``Input`` and ``InputLayer``: where a functional model's graph starts."""
from __future__ import annotations

from typing import Any

import numpy as np

from hiapi.hints import DTypeLike, ShapeLike
from hiapi.graph import placeholder
from hiapi.graph.var import Var
from hiapi.layers import layer_io
from hiapi.layers.layer import Layer


class InputLayer(Layer):
    """Holds the placeholder a functional model is traced from; it has no weights."""

    def __init__(self, shape: ShapeLike | None = None, batch_size: int | None = None,
                 dtype: DTypeLike | None = None, name: str | None = None,
                 batch_shape: ShapeLike | None = None, **kwargs: Any) -> None:
        super().__init__(name=name, dtype=dtype, **kwargs)
        self.batch_shape = _batch_shape(self.name, shape, batch_size, batch_shape)
        output = placeholder(self.batch_shape, self.dtype, name=self.name)
        output._keras_history = (self, (), output)
        layer_io.record(self, output, output, replace=True)    # .input and .output
        self.built = True

    def call(self, inputs, training=None):
        return inputs

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype, "shape": self.batch_shape[1:],
                "batch_size": self.batch_shape[0]}


def Input(shape: ShapeLike | None = None, batch_size: int | None = None,
          dtype: DTypeLike | None = None, name: str | None = None,
          batch_shape: ShapeLike | None = None) -> Var:
    """A symbolic input: ``x = hiapi.Input(shape=(28, 28))`` (shape without the batch axis),
    or ``hiapi.Input(batch_shape=(16, 28, 28))`` with a fixed batch size, as in Keras."""
    return InputLayer(shape=shape, batch_size=batch_size, dtype=dtype, name=name,
                      batch_shape=batch_shape).output


def _batch_shape(name, shape, batch_size, batch_shape):
    """Keras's rules: ``shape`` (without the batch axis) with an optional ``batch_size``, or
    ``batch_shape`` (with it), not both."""
    if shape is not None and batch_shape is not None:
        raise ValueError(f"InputLayer {name!r}: give shape or batch_shape, not both (got "
                         f"shape={shape!r}, batch_shape={batch_shape!r})")
    if batch_size is not None and batch_shape is not None:
        raise ValueError(f"InputLayer {name!r}: give batch_size or batch_shape, not both (got "
                         f"batch_size={batch_size!r}, batch_shape={batch_shape!r})")
    if shape is None and batch_shape is None:
        raise ValueError(f"InputLayer {name!r}: shape is required, e.g. shape=(28, 28)")
    given = shape if batch_shape is None else batch_shape
    try:
        given = tuple(None if d is None else int(d) for d in given)
    except TypeError:
        what = "shape must be a tuple without the batch axis, e.g. shape=(784,)" \
            if batch_shape is None else "batch_shape must be a tuple with the batch axis, " \
            "e.g. batch_shape=(32, 784)"
        raise ValueError(f"Input {what}, got {given!r}") from None
    if batch_shape is not None and not given:
        raise ValueError(f"InputLayer {name!r}: batch_shape needs at least the batch axis, "
                         f"got {batch_shape!r}")
    return given if batch_shape is not None else (batch_size,) + given
