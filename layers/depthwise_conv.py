"""``DepthwiseConv2D`` and ``SeparableConv2D`` with Keras 3's arguments and weights.

A depthwise convolution filters each input channel on its own with ``depth_multiplier``
kernels: it is ``conv2d`` with ``groups = channels``, and Keras's depthwise kernel
(kh, kw, channels, depth_multiplier) reshaped to (kh, kw, 1, channels * depth_multiplier) is
that op's grouped kernel, with output channel ``c * depth_multiplier + m`` as in Keras. A
separable convolution follows it with a 1x1 "pointwise" convolution mixing the channels
(Chollet 2017, https://arxiv.org/abs/1610.02357), here one matmul over the channel axis.
"""
from hiapi import activations, constraints, initializers, regularizers
from hiapi.graph import ops
from hiapi.graph.ops import conv_geometry as geo
from hiapi.layers.input_spec import InputSpec
from hiapi.layers.layer import Layer


class DepthwiseConv2D(Layer):
    """``DepthwiseConv2D(3, depth_multiplier=2)``: input (batch, rows, cols, channels), output
    channels * depth_multiplier channels; weights ``kernel`` (kh, kw, channels,
    depth_multiplier) and ``bias``."""

    def __init__(self, kernel_size, strides=(1, 1), padding="valid", depth_multiplier=1,
                 data_format=None, dilation_rate=(1, 1), activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", bias_initializer="zeros",
                 depthwise_regularizer=None, bias_regularizer=None, depthwise_constraint=None,
                 bias_constraint=None, **kwargs):
        super().__init__(**kwargs)
        cls = type(self).__name__
        padding = str(padding).lower()
        geo.check_padding(f"{cls} {self.name!r}", padding)
        if not isinstance(depth_multiplier, int) or depth_multiplier <= 0:
            raise ValueError(f"{cls} {self.name!r}: depth_multiplier must be a positive "
                             f"integer, got {depth_multiplier!r}")
        if data_format not in (None, "channels_last", "channels_first"):
            raise ValueError(f"{cls} {self.name!r}: data_format must be channels_last or "
                             f"channels_first, got {data_format!r}")
        self.kernel_size = geo.pair(f"{cls} {self.name!r}", "kernel_size", kernel_size)
        self.strides = geo.pair(f"{cls} {self.name!r}", "strides", strides)
        self.dilation_rate = geo.pair(f"{cls} {self.name!r}", "dilation_rate", dilation_rate)
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise ValueError(f"{cls} {self.name!r}: strides > 1 together with dilation_rate > 1 "
                             f"is not supported (Keras does not allow it either)")
        self.padding, self.depth_multiplier = padding, depth_multiplier
        self.data_format = data_format or "channels_last"
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.depthwise_initializer, self.bias_initializer = depthwise_initializer, \
            bias_initializer
        self.depthwise_regularizer = regularizers.get(depthwise_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.depthwise_constraint = constraints.get(depthwise_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self.input_spec = InputSpec(ndim=4)

    def _channels(self, input_shape):
        axis = 1 if self.data_format == "channels_first" else -1
        if input_shape[axis] is None:
            raise ValueError(f"{type(self).__name__} {self.name!r}: the channel axis of input "
                             f"shape {input_shape} must be known")
        self.input_spec = InputSpec(ndim=4, axes={axis: input_shape[axis]})
        return input_shape[axis]

    def _depthwise_weight(self, channels, name):
        return self.add_weight(self.kernel_size + (channels, self.depth_multiplier),
                               self.depthwise_initializer, name,
                               regularizer=self.depthwise_regularizer,
                               constraint=self.depthwise_constraint)

    def _bias_weight(self, size):
        return self.add_weight((size,), self.bias_initializer, "bias",
                               regularizer=self.bias_regularizer,
                               constraint=self.bias_constraint) if self.use_bias else None

    def build(self, input_shape):
        channels = self._channels(input_shape)
        self.kernel = self._depthwise_weight(channels, "kernel")
        self.bias = self._bias_weight(channels * self.depth_multiplier)
        self.built = True

    def _depthwise(self, x, kernel):
        kh, kw, channels, multiplier = kernel.shape
        grouped = ops.reshape(kernel, (kh, kw, 1, channels * multiplier))
        return ops.conv2d(x, grouped, self.strides, self.padding, self.dilation_rate, channels)

    def _apply(self, x):
        return self._depthwise(x, self.kernel.read)

    def call(self, inputs, training=None):
        x = inputs
        if self.data_format == "channels_first":
            x = ops.transpose(x, (0, 2, 3, 1))
        y = self._apply(x)
        if self.bias is not None:
            y = y + self.bias.read
        y = self.activation(y)
        return ops.transpose(y, (0, 3, 1, 2)) if self.data_format == "channels_first" else y

    def get_config(self):
        return {**super().get_config(), "kernel_size": self.kernel_size,
                "strides": self.strides, "padding": self.padding,
                "depth_multiplier": self.depth_multiplier, "data_format": self.data_format,
                "dilation_rate": self.dilation_rate,
                "activation": activations.serialize(self.activation), "use_bias": self.use_bias,
                "depthwise_initializer": initializers.serialize(self.depthwise_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer),
                "depthwise_regularizer": regularizers.serialize(self.depthwise_regularizer),
                "bias_regularizer": regularizers.serialize(self.bias_regularizer),
                "depthwise_constraint": constraints.serialize(self.depthwise_constraint),
                "bias_constraint": constraints.serialize(self.bias_constraint)}


class SeparableConv2D(DepthwiseConv2D):
    """``SeparableConv2D(64, 3)``: a depthwise convolution (``depthwise_kernel`` (kh, kw,
    channels, depth_multiplier)) then a pointwise one (``pointwise_kernel`` (1, 1,
    channels * depth_multiplier, filters)), then ``bias`` (filters,)."""

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1), depth_multiplier=1, activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", pointwise_initializer="glorot_uniform",
                 bias_initializer="zeros", depthwise_regularizer=None,
                 pointwise_regularizer=None, bias_regularizer=None, depthwise_constraint=None,
                 pointwise_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(kernel_size, strides, padding, depth_multiplier, data_format,
                         dilation_rate, activation, use_bias, depthwise_initializer,
                         bias_initializer, depthwise_regularizer, bias_regularizer,
                         depthwise_constraint, bias_constraint, **kwargs)
        if not isinstance(filters, int) or filters <= 0:
            raise ValueError(f"SeparableConv2D {self.name!r}: filters must be a positive "
                             f"integer, got {filters!r}")
        self.filters = filters
        self.pointwise_initializer = pointwise_initializer
        self.pointwise_regularizer = regularizers.get(pointwise_regularizer)
        self.pointwise_constraint = constraints.get(pointwise_constraint)

    def build(self, input_shape):
        channels = self._channels(input_shape)
        self.depthwise_kernel = self._depthwise_weight(channels, "depthwise_kernel")
        self.pointwise_kernel = self.add_weight(
            (1, 1, channels * self.depth_multiplier, self.filters), self.pointwise_initializer,
            "pointwise_kernel", regularizer=self.pointwise_regularizer,
            constraint=self.pointwise_constraint)
        self.bias = self._bias_weight(self.filters)
        self.built = True

    def _apply(self, x):
        y = self._depthwise(x, self.depthwise_kernel.read)
        pointwise = self.pointwise_kernel.read
        return ops.matmul(y, ops.reshape(pointwise, pointwise.shape[2:]))

    def get_config(self):
        return {**super().get_config(), "filters": self.filters,
                "pointwise_initializer": initializers.serialize(self.pointwise_initializer),
                "pointwise_regularizer": regularizers.serialize(self.pointwise_regularizer),
                "pointwise_constraint": constraints.serialize(self.pointwise_constraint)}
