"""What every convolution layer (``Conv``, ``ConvTranspose``, ``DepthwiseConv``,
``SeparableConv``) shares, kept in one place so the variants cannot drift apart: checking and
storing the spatial arguments, ``data_format``, activation and bias; finding the channel axis
in ``build``; and running ``channels_first`` inputs through the channels-last (NHWC) ops.
A subclass stores its own kernel arguments, makes its kernel in ``build`` and writes
``_apply(x)`` on a channels-last input."""
from __future__ import annotations

from typing import Any

from hiapi.hints import (ActivationLike, ConstraintLike, DataFormat, InitializerLike,
                         IntOrSequence, RegularizerLike)
from hiapi import activations, constraints, initializers, regularizers
from hiapi.graph import ops
from hiapi.backends import conv_geometry as geo
from hiapi.layers.data_format import check_data_format
from hiapi.layers.input_spec import InputSpec
from hiapi.layers.layer import Layer


class _ConvBase(Layer):
    rank = 2

    def __init__(self, kernel_size: IntOrSequence, strides: IntOrSequence, padding: str,
                 data_format: DataFormat, dilation_rate: IntOrSequence, activation: ActivationLike,
                 use_bias: bool, bias_initializer: InitializerLike,
                 bias_regularizer: RegularizerLike, bias_constraint: ConstraintLike,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        padding = str(padding).lower()
        geo.check_padding(self._who(), padding)
        self.data_format = check_data_format(self, data_format)
        self.padding = padding
        self.kernel_size = self._tuple("kernel_size", kernel_size)
        self.strides = self._tuple("strides", strides)
        self.dilation_rate = self._tuple("dilation_rate", dilation_rate)
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.bias_initializer = bias_initializer
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.bias_constraint = constraints.get(bias_constraint)
        self.input_spec = InputSpec(ndim=self.rank + 2)

    def _who(self):
        return f"{type(self).__name__} {self.name!r}"

    def _tuple(self, name, value):
        values = (value,) * self.rank if isinstance(value, int) else tuple(value)
        if len(values) != self.rank or not all(isinstance(v, int) and v > 0 for v in values):
            raise ValueError(f"{self._who()}: {name} must be a positive int or {self.rank} of "
                             f"them, got {value!r}")
        return values

    def _check_no_strided_dilation(self):
        """Keras refuses strides > 1 with dilation_rate > 1 for these layers; so do we."""
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise ValueError(f"{self._who()}: strides > 1 together with dilation_rate > 1 is "
                             f"not supported (Keras does not allow it either), got "
                             f"strides={self.strides}, dilation_rate={self.dilation_rate}")

    def _channels(self, input_shape, groups=1):
        """The input's channel count (which must be known, and divisible by ``groups``); also
        pins it in the input spec."""
        axis = 1 if self.data_format == "channels_first" else -1
        channels = input_shape[axis]
        if channels is None or channels % groups:
            divisible = f" and divisible by groups ({groups})" if groups != 1 else ""
            raise ValueError(f"{self._who()}: the channel axis of input shape {input_shape} "
                             f"must be known{divisible}")
        self.input_spec = InputSpec(ndim=self.rank + 2, axes={axis: channels})
        return channels

    def _bias_weight(self, size):
        return self.add_weight((size,), self.bias_initializer, "bias",
                               regularizer=self.bias_regularizer,
                               constraint=self.bias_constraint) if self.use_bias else None

    def call(self, inputs, training=None):
        x, spatial = inputs, tuple(range(1, self.rank + 1))
        if self.data_format == "channels_first":
            x = ops.transpose(x, (0,) + tuple(a + 1 for a in spatial) + (1,))
        y = self._apply(x)
        if self.bias is not None:
            y = y + self.bias.read
        y = self.activation(y)
        if self.data_format == "channels_first":
            y = ops.transpose(y, (0, self.rank + 1) + spatial)
        return y

    def get_config(self):
        return {**super().get_config(), "kernel_size": self.kernel_size,
                "strides": self.strides, "padding": self.padding,
                "data_format": self.data_format, "dilation_rate": self.dilation_rate,
                "activation": activations.serialize(self.activation), "use_bias": self.use_bias,
                "bias_initializer": initializers.serialize(self.bias_initializer),
                "bias_regularizer": regularizers.serialize(self.bias_regularizer),
                "bias_constraint": constraints.serialize(self.bias_constraint)}
