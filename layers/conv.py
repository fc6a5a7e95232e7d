"""``Conv2D`` and ``Conv1D`` with Keras's arguments, defaults and kernel layout
(kh, kw, in_channels/groups, filters). ``channels_first`` inputs are transposed to
channels-last around the NHWC op."""
from __future__ import annotations

from typing import Any

from hiapi.hints import (ActivationLike, ConstraintLike, DataFormat, InitializerLike,
                         IntOrSequence, RegularizerLike)
from hiapi import constraints, initializers, regularizers
from hiapi.graph import ops
from hiapi.layers.conv_base import _ConvBase


class _Conv(_ConvBase):
    rank = 2

    def __init__(self, filters: int, kernel_size: IntOrSequence, strides: IntOrSequence = 1,
                 padding: str = "valid", data_format: DataFormat = None,
                 dilation_rate: IntOrSequence = 1, groups: int = 1,
                 activation: ActivationLike = None, use_bias: bool = True,
                 kernel_initializer: InitializerLike = "glorot_uniform",
                 bias_initializer: InitializerLike = "zeros",
                 kernel_regularizer: RegularizerLike = None,
                 bias_regularizer: RegularizerLike = None, kernel_constraint: ConstraintLike = None,
                 bias_constraint: ConstraintLike = None, **kwargs: Any) -> None:
        super().__init__(kernel_size, strides, padding, data_format, dilation_rate, activation,
                         use_bias, bias_initializer, bias_regularizer, bias_constraint, **kwargs)
        if not isinstance(filters, int) or filters <= 0:
            raise ValueError(f"{self._who()}: filters must be a positive integer, "
                             f"got {filters!r}")
        if filters % groups:
            raise ValueError(f"{self._who()}: filters ({filters}) must be divisible by "
                             f"groups ({groups})")
        self.filters, self.groups = filters, groups
        self.kernel_initializer = kernel_initializer
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)

    def _kernel_shape(self, channels):
        return self.kernel_size + (channels // self.groups, self.filters)

    def build(self, input_shape):
        channels = self._channels(input_shape, self.groups)
        self.kernel = self.add_weight(self._kernel_shape(channels), self.kernel_initializer,
                                      "kernel", regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self.bias = self._bias_weight(self.filters)
        self.built = True

    def _conv(self, x, kernel, strides, dilation):
        return ops.conv2d(x, kernel, strides, self.padding, dilation, self.groups)

    def get_config(self):
        return {**super().get_config(), "filters": self.filters, "groups": self.groups,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "kernel_regularizer": regularizers.serialize(self.kernel_regularizer),
                "kernel_constraint": constraints.serialize(self.kernel_constraint)}


class Conv2D(_Conv):
    """``Conv2D(32, (3, 3), activation="relu")``: input (batch, rows, cols, channels)."""
    rank = 2

    def _apply(self, x):
        return self._conv(x, self.kernel.read, self.strides, self.dilation_rate)


class Conv1D(_Conv):
    """``Conv1D(64, 5)``: input (batch, steps, channels); runs as Conv2D on a 1-row image.
    ``padding="causal"`` pads ``dilation_rate * (kernel_size - 1)`` zeros before the first step
    (none after), so output step t sees only inputs up to t (WaveNet, van den Oord et al. 2016,
    https://arxiv.org/abs/1609.03499)."""
    rank = 1

    def __init__(self, filters: int, kernel_size: IntOrSequence, strides: IntOrSequence = 1,
                 padding: str = "valid", **kwargs: Any) -> None:
        causal = str(padding).lower() == "causal"
        super().__init__(filters, kernel_size, strides, "valid" if causal else padding, **kwargs)
        if causal:
            self.padding = "causal"

    def _apply(self, x):
        padding = self.padding
        if padding == "causal":
            x = ops.pad(x, [(0, 0), (self.dilation_rate[0] * (self.kernel_size[0] - 1), 0),
                            (0, 0)])
            padding = "valid"
        image = ops.expand_dims(x, 1)
        kernel = ops.expand_dims(self.kernel.read, 0)
        y = ops.conv2d(image, kernel, (1,) + self.strides, padding, (1,) + self.dilation_rate,
                       self.groups)
        return ops.squeeze(y, 1)
