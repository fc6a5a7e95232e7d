"""Pooling layers with Keras's names: max/average 1-D and 2-D, and global pooling."""
from __future__ import annotations

from typing import Any, Callable

from hiapi.hints import DataFormat, IntOrSequence
from hiapi.graph import ops
from hiapi.backends import conv_geometry as geo
from hiapi.layers.input_spec import InputSpec
from hiapi.layers.layer import Layer


def _check_format(layer, data_format):
    if data_format not in (None, "channels_last", "channels_first"):
        raise ValueError(f"{type(layer).__name__} {layer.name!r}: data_format must be "
                         f"channels_last or channels_first, got {data_format!r}")
    return data_format or "channels_last"


class _Pool2D(Layer):
    pool: Callable[..., Any] | None = None       # the ops function a subclass pools with
    rank = 2

    def __init__(self, pool_size: IntOrSequence = 2, strides: IntOrSequence | None = None,
                 padding: str = "valid", data_format: DataFormat = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        padding = str(padding).lower()
        geo.check_padding(type(self).__name__, padding)
        norm = lambda v: (v,) * self.rank if isinstance(v, int) else tuple(v)
        self.pool_size = norm(pool_size)
        self.strides = self.pool_size if strides is None else norm(strides)
        self.padding = padding
        self.data_format = _check_format(self, data_format)
        self.input_spec = InputSpec(ndim=self.rank + 2)

    def call(self, inputs, training=None):
        x = inputs
        if self.data_format == "channels_first":
            x = ops.transpose(x, (0,) + tuple(range(2, x.ndim)) + (1,))
        if self.rank == 1:
            y = ops.squeeze(type(self).pool(ops.expand_dims(x, 1), (1,) + self.pool_size,
                                            (1,) + self.strides, self.padding), 1)
        else:
            y = type(self).pool(x, self.pool_size, self.strides, self.padding)
        if self.data_format == "channels_first":
            y = ops.transpose(y, (0, y.ndim - 1) + tuple(range(1, y.ndim - 1)))
        return y

    def get_config(self):
        return {**super().get_config(), "pool_size": self.pool_size, "strides": self.strides,
                "padding": self.padding, "data_format": self.data_format}


class MaxPooling2D(_Pool2D):
    pool = staticmethod(ops.max_pool2d)


class AveragePooling2D(_Pool2D):
    pool = staticmethod(ops.avg_pool2d)


class MaxPooling1D(_Pool2D):
    pool = staticmethod(ops.max_pool2d)
    rank = 1


class AveragePooling1D(_Pool2D):
    pool = staticmethod(ops.avg_pool2d)
    rank = 1


class _GlobalPool(Layer):
    rank = 2
    reduce: Callable[..., Any] | None = None

    def __init__(self, data_format: DataFormat = None, keepdims: bool = False,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.data_format = _check_format(self, data_format)
        self.keepdims = keepdims
        self.input_spec = InputSpec(ndim=self.rank + 2)

    def call(self, inputs, training=None):
        axes = tuple(range(2, 2 + self.rank)) if self.data_format == "channels_first" \
            else tuple(range(1, 1 + self.rank))
        return type(self).reduce(inputs, axes, self.keepdims)

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format,
                "keepdims": self.keepdims}


class GlobalAveragePooling2D(_GlobalPool):
    reduce = staticmethod(ops.mean)


class GlobalMaxPooling2D(_GlobalPool):
    reduce = staticmethod(ops.max)


class GlobalAveragePooling1D(_GlobalPool):
    """Mean over the steps; with a mask (``Embedding(mask_zero=True)``, ``Masking``) the mean
    over the real steps only, as Keras does. The output has no steps, so no mask."""
    reduce = staticmethod(ops.mean)
    rank = 1

    def call(self, inputs, training=None, mask=None):
        if mask is None:
            return super().call(inputs, training)
        steps = 2 if self.data_format == "channels_first" else 1
        weight = ops.expand_dims(ops.cast(mask, inputs.dtype), 3 - steps)
        total = ops.sum(inputs * weight, steps, keepdims=self.keepdims)
        # a sequence with every step masked averages to 0 rather than 0/0 = NaN
        return total / ops.maximum(ops.sum(weight, steps, keepdims=self.keepdims), 1.0)

    def compute_mask(self, inputs, previous_mask=None):
        return None


class GlobalMaxPooling1D(_GlobalPool):
    reduce = staticmethod(ops.max)
    rank = 1
