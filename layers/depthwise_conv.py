"""``DepthwiseConv1D/2D`` and ``SeparableConv1D/2D`` with Keras 3's arguments and weights.

A depthwise convolution filters each input channel on its own with ``depth_multiplier``
kernels: it is ``conv2d`` with ``groups = channels``, and Keras's depthwise kernel
(kh, kw, channels, depth_multiplier) reshaped to (kh, kw, 1, channels * depth_multiplier) is
that op's grouped kernel, with output channel ``c * depth_multiplier + m`` as in Keras. A
separable convolution follows it with a 1x1 "pointwise" convolution mixing the channels
(Chollet 2017, https://arxiv.org/abs/1610.02357), here one matmul over the channel axis. The
1-D layers run the 2-D op on a height-1 image, as ``Conv1D`` does.
"""
from __future__ import annotations

from typing import Any

from hiapi.hints import (ActivationLike, ConstraintLike, DataFormat, InitializerLike,
                         IntOrSequence, RegularizerLike)
from hiapi import constraints, initializers, regularizers
from hiapi.graph import ops
from hiapi.layers.conv_base import _ConvBase


class _DepthwiseBase(_ConvBase):
    rank = 2

    def __init__(self, kernel_size: IntOrSequence, strides: IntOrSequence = (1, 1),
                 padding: str = "valid", depth_multiplier: int = 1, data_format: DataFormat = None,
                 dilation_rate: IntOrSequence = (1, 1), activation: ActivationLike = None,
                 use_bias: bool = True, depthwise_initializer: InitializerLike = "glorot_uniform",
                 bias_initializer: InitializerLike = "zeros",
                 depthwise_regularizer: RegularizerLike = None,
                 bias_regularizer: RegularizerLike = None,
                 depthwise_constraint: ConstraintLike = None,
                 bias_constraint: ConstraintLike = None, **kwargs: Any) -> None:
        super().__init__(kernel_size, strides, padding, data_format, dilation_rate, activation,
                         use_bias, bias_initializer, bias_regularizer, bias_constraint, **kwargs)
        if not isinstance(depth_multiplier, int) or depth_multiplier <= 0:
            raise ValueError(f"{self._who()}: depth_multiplier must be a positive "
                             f"integer, got {depth_multiplier!r}")
        self._check_no_strided_dilation()
        self.depth_multiplier = depth_multiplier
        self.depthwise_initializer = depthwise_initializer
        self.depthwise_regularizer = regularizers.get(depthwise_regularizer)
        self.depthwise_constraint = constraints.get(depthwise_constraint)

    def _depthwise_weight(self, channels, name):
        return self.add_weight(self.kernel_size + (channels, self.depth_multiplier),
                               self.depthwise_initializer, name,
                               regularizer=self.depthwise_regularizer,
                               constraint=self.depthwise_constraint)

    def build(self, input_shape):
        channels = self._channels(input_shape)
        self.kernel = self._depthwise_weight(channels, "kernel")
        self.bias = self._bias_weight(channels * self.depth_multiplier)
        self.built = True

    def _depthwise(self, x, kernel):
        strides, dilation = self.strides, self.dilation_rate
        if self.rank == 1:
            x, kernel = ops.expand_dims(x, 1), ops.expand_dims(kernel, 0)
            strides, dilation = (1,) + strides, (1,) + dilation
        kh, kw, channels, multiplier = kernel.shape
        grouped = ops.reshape(kernel, (kh, kw, 1, channels * multiplier))
        y = ops.conv2d(x, grouped, strides, self.padding, dilation, channels)
        return ops.squeeze(y, 1) if self.rank == 1 else y

    def _apply(self, x):
        return self._depthwise(x, self.kernel.read)

    def get_config(self):
        return {**super().get_config(), "depth_multiplier": self.depth_multiplier,
                "depthwise_initializer": initializers.serialize(self.depthwise_initializer),
                "depthwise_regularizer": regularizers.serialize(self.depthwise_regularizer),
                "depthwise_constraint": constraints.serialize(self.depthwise_constraint)}


class DepthwiseConv2D(_DepthwiseBase):
    """``DepthwiseConv2D(3, depth_multiplier=2)``: input (batch, rows, cols, channels), output
    channels * depth_multiplier channels; weights ``kernel`` (kh, kw, channels,
    depth_multiplier) and ``bias``."""
    rank = 2


class DepthwiseConv1D(_DepthwiseBase):
    """``DepthwiseConv1D(3)``: input (batch, steps, channels); ``kernel`` (k, channels,
    depth_multiplier)."""
    rank = 1

    def __init__(self, kernel_size: IntOrSequence, strides: IntOrSequence = 1,
                 padding: str = "valid", depth_multiplier: int = 1, data_format: DataFormat = None,
                 dilation_rate: IntOrSequence = 1, **kwargs: Any) -> None:
        super().__init__(kernel_size, strides, padding, depth_multiplier, data_format,
                         dilation_rate, **kwargs)


class _SeparableBase(_DepthwiseBase):

    def __init__(self, filters: int, kernel_size: IntOrSequence, strides: IntOrSequence = (1, 1),
                 padding: str = "valid", data_format: DataFormat = None,
                 dilation_rate: IntOrSequence = (1, 1), depth_multiplier: int = 1,
                 activation: ActivationLike = None, use_bias: bool = True,
                 depthwise_initializer: InitializerLike = "glorot_uniform",
                 pointwise_initializer: InitializerLike = "glorot_uniform",
                 bias_initializer: InitializerLike = "zeros",
                 depthwise_regularizer: RegularizerLike = None,
                 pointwise_regularizer: RegularizerLike = None,
                 bias_regularizer: RegularizerLike = None,
                 depthwise_constraint: ConstraintLike = None,
                 pointwise_constraint: ConstraintLike = None,
                 bias_constraint: ConstraintLike = None, **kwargs: Any) -> None:
        super().__init__(kernel_size, strides, padding, depth_multiplier, data_format,
                         dilation_rate, activation, use_bias, depthwise_initializer,
                         bias_initializer, depthwise_regularizer, bias_regularizer,
                         depthwise_constraint, bias_constraint, **kwargs)
        if not isinstance(filters, int) or filters <= 0:
            raise ValueError(f"{self._who()}: filters must be a positive "
                             f"integer, got {filters!r}")
        self.filters = filters
        self.pointwise_initializer = pointwise_initializer
        self.pointwise_regularizer = regularizers.get(pointwise_regularizer)
        self.pointwise_constraint = constraints.get(pointwise_constraint)

    def build(self, input_shape):
        channels = self._channels(input_shape)
        self.depthwise_kernel = self._depthwise_weight(channels, "depthwise_kernel")
        self.pointwise_kernel = self.add_weight(
            (1,) * self.rank + (channels * self.depth_multiplier, self.filters),
            self.pointwise_initializer,
            "pointwise_kernel", regularizer=self.pointwise_regularizer,
            constraint=self.pointwise_constraint)
        self.bias = self._bias_weight(self.filters)
        self.built = True

    def _apply(self, x):
        y = self._depthwise(x, self.depthwise_kernel.read)
        pointwise = self.pointwise_kernel.read
        return ops.matmul(y, ops.reshape(pointwise, pointwise.shape[-2:]))

    def get_config(self):
        return {**super().get_config(), "filters": self.filters,
                "pointwise_initializer": initializers.serialize(self.pointwise_initializer),
                "pointwise_regularizer": regularizers.serialize(self.pointwise_regularizer),
                "pointwise_constraint": constraints.serialize(self.pointwise_constraint)}


class SeparableConv2D(_SeparableBase):
    """``SeparableConv2D(64, 3)``: a depthwise convolution (``depthwise_kernel`` (kh, kw,
    channels, depth_multiplier)) then a pointwise one (``pointwise_kernel`` (1, 1,
    channels * depth_multiplier, filters)), then ``bias`` (filters,)."""
    rank = 2


class SeparableConv1D(_SeparableBase):
    """``SeparableConv1D(64, 3)``: input (batch, steps, channels); ``depthwise_kernel`` (k,
    channels, depth_multiplier), ``pointwise_kernel`` (1, channels * depth_multiplier,
    filters), ``bias``."""
    rank = 1

    def __init__(self, filters: int, kernel_size: IntOrSequence, strides: IntOrSequence = 1,
                 padding: str = "valid", data_format: DataFormat = None,
                 dilation_rate: IntOrSequence = 1, **kwargs: Any) -> None:
        super().__init__(filters, kernel_size, strides, padding, data_format, dilation_rate,
                         **kwargs)
