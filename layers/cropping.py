"""``Cropping1D`` and ``Cropping2D``: drop rows/columns (or steps) at the edges, as views of
the input (the ``slice`` op), whose gradient pads the cropped edges with zeros."""
from __future__ import annotations

from typing import Any, Sequence

from hiapi.hints import DataFormat
from hiapi.graph import ops
from hiapi.layers.data_format import check_data_format
from hiapi.layers.input_spec import InputSpec
from hiapi.layers.layer import Layer


def _pair(layer, value, what):
    pair = (value, value) if isinstance(value, int) else tuple(value)
    if len(pair) != 2 or not all(isinstance(v, int) and v >= 0 for v in pair):
        raise ValueError(f"{type(layer).__name__} {layer.name!r}: {what} must be a "
                         f"non-negative int or a pair of them, got {value!r}")
    return pair


def _crop(layer, x, axis, before, after):
    size = x.shape[axis]
    if size is None:
        raise ValueError(f"{type(layer).__name__} {layer.name!r}: axis {axis} of input shape "
                         f"{x.shape} must be known to crop it")
    if before + after >= size:
        raise ValueError(f"{type(layer).__name__} {layer.name!r}: cropping {before} + {after} "
                         f"from axis {axis} of size {size} (input shape {x.shape}) leaves "
                         f"nothing")
    return ops.slice_axis(x, axis, before, size - after) if before or after else x


class Cropping1D(Layer):
    """``Cropping1D((1, 2))``: drop 1 step at the start and 2 at the end of
    (batch, steps, features); an int crops both ends alike."""

    def __init__(self, cropping: int | Sequence[int] = (1, 1), **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cropping = _pair(self, cropping, "cropping")
        self.input_spec = InputSpec(ndim=3)

    def call(self, inputs, training=None):
        return _crop(self, inputs, 1, *self.cropping)

    def get_config(self):
        return {**super().get_config(), "cropping": self.cropping}


class Cropping2D(Layer):
    """``Cropping2D(((top, bottom), (left, right)))``; ``(rows, cols)`` crops symmetrically;
    an int crops every edge alike."""

    def __init__(self, cropping: int | Sequence[Any] = ((0, 0), (0, 0)),
                 data_format: DataFormat = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if isinstance(cropping, int):
            cropping = ((cropping, cropping), (cropping, cropping))
        elif len(cropping) == 2 and all(isinstance(c, int) for c in cropping):
            cropping = ((cropping[0], cropping[0]), (cropping[1], cropping[1]))
        elif len(cropping) != 2:
            raise ValueError(f"Cropping2D {self.name!r}: cropping must be an int, 2 ints or "
                             f"2 pairs of ints, got {cropping!r}")
        self.cropping = tuple(_pair(self, c, "each cropping entry") for c in cropping)
        self.data_format = check_data_format(self, data_format)
        self.input_spec = InputSpec(ndim=4)

    def call(self, inputs, training=None):
        axes = (2, 3) if self.data_format == "channels_first" else (1, 2)
        x = inputs
        for axis, (before, after) in zip(axes, self.cropping):
            x = _crop(self, x, axis, before, after)
        return x

    def get_config(self):
        return {**super().get_config(), "cropping": self.cropping,
                "data_format": self.data_format}
