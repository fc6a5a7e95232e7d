"""Layers that rearrange values: Reshape, Permute, ZeroPadding2D, UpSampling2D."""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from hiapi.hints import DataFormat, IntOrSequence
from hiapi.graph import ops
from hiapi.layers.layer import Layer


class Reshape(Layer):
    """``Reshape((7, 7, 16))``: a new shape for each sample (one entry may be -1)."""

    def __init__(self, target_shape: Sequence[int], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.target_shape = tuple(int(d) for d in target_shape)
        if any(d < 1 and d != -1 for d in self.target_shape) or self.target_shape.count(-1) > 1:
            raise ValueError(f"Reshape {self.name!r}: target_shape must be positive sizes with "
                             f"at most one -1, got {tuple(target_shape)}")

    def call(self, inputs, training=None):
        rest, target = inputs.shape[1:], self.target_shape
        if None in rest:
            raise ValueError(f"Reshape {self.name!r}: all but the batch axis of its input must "
                             f"be known, got shape {inputs.shape}")
        known, total = math.prod(d for d in target if d != -1), math.prod(rest)
        if (-1 in target and total % known) or (-1 not in target and known != total):
            raise ValueError(f"Reshape {self.name!r}: cannot reshape input of shape "
                             f"{inputs.shape} ({total} values per sample) to {target}")
        target = tuple(total // known if d == -1 else d for d in target)
        return ops.reshape(inputs, (-1,) + target)

    def get_config(self):
        return {**super().get_config(), "target_shape": self.target_shape}


class Permute(Layer):
    """``Permute((2, 1))`` swaps the two non-batch axes (1-based, as in Keras)."""

    def __init__(self, dims: Sequence[int], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.dims = tuple(dims)
        if sorted(self.dims) != list(range(1, len(self.dims) + 1)):
            raise ValueError(f"Permute {self.name!r}: dims must be a permutation of "
                             f"1..{len(self.dims)}, got {dims}")

    def call(self, inputs, training=None):
        if inputs.ndim != len(self.dims) + 1:
            raise ValueError(f"Permute {self.name!r}: dims {self.dims} need inputs of rank "
                             f"{len(self.dims) + 1}, got shape {inputs.shape}")
        return ops.transpose(inputs, (0,) + self.dims)

    def get_config(self):
        return {**super().get_config(), "dims": self.dims}


def _spatial_axes(data_format):
    return (2, 3) if data_format == "channels_first" else (1, 2)


class ZeroPadding2D(Layer):
    """Zeros around images: ``padding`` is an int, (rows, cols) or ((top, bottom),
    (left, right))."""

    def __init__(self, padding: int | Sequence[Any] = (1, 1),
                 data_format: DataFormat = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if isinstance(padding, int):
            padding = ((padding, padding), (padding, padding))
        elif all(isinstance(p, int) for p in padding):
            padding = ((padding[0], padding[0]), (padding[1], padding[1]))
        self.padding = tuple(tuple(int(v) for v in p) for p in padding)
        self.data_format = data_format or "channels_last"

    def call(self, inputs, training=None):
        pads = [(0, 0)] * 4
        for axis, pair in zip(_spatial_axes(self.data_format), self.padding):
            pads[axis] = pair
        return ops.pad(inputs, pads)

    def get_config(self):
        return {**super().get_config(), "padding": self.padding, "data_format": self.data_format}


class UpSampling2D(Layer):
    """Repeat rows and columns ``size`` times (nearest-neighbour upsampling)."""

    def __init__(self, size: IntOrSequence = (2, 2), data_format: DataFormat = None,
                 interpolation: str = "nearest", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if interpolation != "nearest":
            raise NotImplementedError(f"UpSampling2D {self.name!r}: only interpolation="
                                      f"'nearest' is supported, got {interpolation!r}")
        self.size = (size, size) if isinstance(size, int) else tuple(size)
        self.data_format = data_format or "channels_last"
        self.interpolation = interpolation

    def call(self, inputs, training=None):
        x = inputs
        if self.data_format == "channels_first":
            x = ops.transpose(x, (0, 2, 3, 1))
        _, h, w, c = x.shape
        sh, sw = self.size
        spread = ops.reshape(x, (-1, h, 1, w, 1, c)) * \
            ops.constant(np.ones((1, 1, sh, 1, sw, 1), x.dtype))
        y = ops.reshape(spread, (-1, h * sh, w * sw, c))
        return ops.transpose(y, (0, 3, 1, 2)) if self.data_format == "channels_first" else y

    def get_config(self):
        return {**super().get_config(), "size": self.size, "data_format": self.data_format,
                "interpolation": self.interpolation}
