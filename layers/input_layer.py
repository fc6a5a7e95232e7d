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
                 dtype: DTypeLike | None = None, name: str | None = None, **kwargs: Any) -> None:
        super().__init__(name=name, dtype=dtype, **kwargs)
        if shape is None:
            raise ValueError(f"InputLayer {self.name!r}: shape is required, e.g. shape=(28, 28)")
        try:
            shape = tuple(None if d is None else int(d) for d in shape)
        except TypeError:
            raise ValueError(f"Input shape must be a tuple without the batch axis, e.g. "
                             f"shape=(784,), got {shape!r}") from None
        self.batch_shape = (batch_size,) + shape
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
          dtype: DTypeLike | None = None, name: str | None = None) -> Var:
    """A symbolic input: ``x = hiapi.Input(shape=(28, 28))`` (shape without the batch axis)."""
    return InputLayer(shape=shape, batch_size=batch_size, dtype=dtype, name=name).output
