"""``Conv2DTranspose`` and ``Conv1DTranspose``: the transposed ("de-") convolution, computed as the input gradient of the
convolution that would map its output back to its input (``conv2d_input_grad``), so it shares
that op's kernels on every backend and differentiates to any order.

Keras's kernel layout is (kh, kw, filters, in_channels): exactly the kernel of that forward
convolution (from ``filters`` channels to ``in_channels``), so Keras weights load unchanged.
The 1-D layer runs the 2-D op on a height-1 image.
Output sizes follow Keras (``keras.src.ops.operation_utils.deconv_output_length``); the
placement of the 'same' padding matches Keras's JAX/TensorFlow backends.
"""
from __future__ import annotations

from typing import Any

from hiapi.hints import (ActivationLike, ConstraintLike, DataFormat, InitializerLike,
                         IntOrSequence, RegularizerLike)
from hiapi.graph import ops
from hiapi.backends import conv_geometry as geo
from hiapi.layers.conv import _Conv


def deconv_length(size, kernel, stride, dilation, padding, output_padding):
    """Keras's output length of a transposed convolution along one axis."""
    extent = geo.window_extent(kernel, dilation)
    if output_padding is None:
        return size * stride + max(extent - stride, 0) if padding == "valid" \
            else size * stride
    pad = extent // 2 if padding == "same" else 0
    return (size - 1) * stride + extent - 2 * pad + output_padding


class _ConvTranspose(_Conv):
    rank = 2

    def __init__(self, filters: int, kernel_size: IntOrSequence, strides: IntOrSequence = (1, 1),
                 padding: str = "valid", output_padding: IntOrSequence | None = None,
                 data_format: DataFormat = None, dilation_rate: IntOrSequence = (1, 1),
                 activation: ActivationLike = None, use_bias: bool = True,
                 kernel_initializer: InitializerLike = "glorot_uniform",
                 bias_initializer: InitializerLike = "zeros",
                 kernel_regularizer: RegularizerLike = None,
                 bias_regularizer: RegularizerLike = None, kernel_constraint: ConstraintLike = None,
                 bias_constraint: ConstraintLike = None, **kwargs: Any) -> None:
        super().__init__(filters, kernel_size, strides, padding, data_format, dilation_rate,
                         1, activation, use_bias, kernel_initializer, bias_initializer,
                         kernel_regularizer, bias_regularizer, kernel_constraint,
                         bias_constraint, **kwargs)
        self._check_no_strided_dilation()
        self.output_padding = None
        if output_padding is not None:
            pads = (output_padding,) * self.rank if isinstance(output_padding, int) \
                else tuple(output_padding)
            if len(pads) != self.rank or not all(isinstance(p, int) and 0 <= p < s
                                                 for p, s in zip(pads, self.strides)):
                raise ValueError(f"{self._who()}: output_padding must be an int or "
                                 f"{self.rank} ints, each >= 0 and smaller than its stride "
                                 f"{self.strides}, got {output_padding!r}")
            self.output_padding = pads

    def _kernel_shape(self, channels):
        return self.kernel_size + (self.filters, channels)

    def _apply(self, x):
        kernel, kernel_size = self.kernel.read, self.kernel_size
        strides, dilation = self.strides, self.dilation_rate
        pads = self.output_padding or (None,) * self.rank
        if self.rank == 1:
            x, kernel = ops.expand_dims(x, 1), ops.expand_dims(kernel, 0)
            kernel_size, strides, dilation = (1,) + kernel_size, (1,) + strides, (1,) + dilation
            pads = (None,) + pads
        hw = x.shape[1:3]
        if None in hw:
            raise ValueError(f"{self._who()}: the spatial size of the "
                             f"input must be known, got shape {x.shape}")
        out_hw = tuple(deconv_length(n, k, s, d, self.padding, p) for n, k, s, d, p in
                       zip(hw, kernel_size, strides, dilation, pads))
        back = tuple(geo.output_size(n, k, s, d, self.padding) for n, k, s, d in
                     zip(out_hw, kernel_size, strides, dilation))
        if back != tuple(hw):
            raise ValueError(f"{self._who()}: with kernel_size "
                             f"{self.kernel_size}, strides {self.strides}, padding "
                             f"{self.padding!r} and output_padding {self.output_padding}, an "
                             f"output of size {out_hw} does not convolve back to the input's "
                             f"{tuple(hw)}; use an odd kernel or output_padding >= 1")
        y = ops.conv2d_input_grad(x, kernel, out_hw, strides, self.padding, dilation)
        return ops.squeeze(y, 1) if self.rank == 1 else y

    def get_config(self):
        config = {**super().get_config(), "output_padding": self.output_padding}
        del config["groups"]
        return config


class Conv2DTranspose(_ConvTranspose):
    """``Conv2DTranspose(16, 3, strides=2, padding="same")`` doubles the rows and columns:
    input (batch, rows, cols, channels), kernel (kh, kw, filters, channels)."""
    rank = 2


class Conv1DTranspose(_ConvTranspose):
    """``Conv1DTranspose(16, 3, strides=2, padding="same")`` doubles the steps: input
    (batch, steps, channels), kernel (k, filters, channels)."""
    rank = 1

    def __init__(self, filters: int, kernel_size: IntOrSequence, strides: IntOrSequence = 1,
                 padding: str = "valid", output_padding: IntOrSequence | None = None,
                 data_format: DataFormat = None, dilation_rate: IntOrSequence = 1,
                 **kwargs: Any) -> None:
        super().__init__(filters, kernel_size, strides, padding, output_padding, data_format,
                         dilation_rate, **kwargs)
