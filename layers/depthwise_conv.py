"""``DepthwiseConv1D/2D`` and ``SeparableConv1D/2D`` with Keras 3's arguments and weights.

A depthwise convolution filters each input channel on its own with ``depth_multiplier``
kernels: it is ``conv2d`` with ``groups = channels``, and Keras's depthwise kernel
(kh, kw, channels, depth_multiplier) reshaped to (kh, kw, 1, channels * depth_multiplier) is
that op's grouped kernel, with output channel ``c * depth_multiplier + m`` as in Keras. A
separable convolution follows it with a 1x1 "pointwise" convolution mixing the channels
(Chollet 2017, https://arxiv.org/abs/1610.02357), here one matmul over the channel axis. The
1-D layers run the 2-D op on a height-1 image, as ``Conv1D`` does.
"""
from hiapi import activations, constraints, initializers, regularizers
from hiapi.graph import ops
from hiapi.graph.ops import conv_geometry as geo
from hiapi.layers.input_spec import InputSpec
from hiapi.layers.layer import Layer


class _DepthwiseBase(Layer):
    rank = 2

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
        self.kernel_size = self._tuple("kernel_size", kernel_size)
        self.strides = self._tuple("strides", strides)
        self.dilation_rate = self._tuple("dilation_rate", dilation_rate)
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
        self.input_spec = InputSpec(ndim=self.rank + 2)

    def _tuple(self, name, value):
        values = (value,) * self.rank if isinstance(value, int) else tuple(value)
        if len(values) != self.rank or not all(isinstance(v, int) and v > 0 for v in values):
            raise ValueError(f"{type(self).__name__} {self.name!r}: {name} must be a positive "
                             f"int or {self.rank} of them, got {value!r}")
        return values

    def _channels(self, input_shape):
        axis = 1 if self.data_format == "channels_first" else -1
        if input_shape[axis] is None:
            raise ValueError(f"{type(self).__name__} {self.name!r}: the channel axis of input "
                             f"shape {input_shape} must be known")
        self.input_spec = InputSpec(ndim=self.rank + 2, axes={axis: input_shape[axis]})
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
                "depth_multiplier": self.depth_multiplier, "data_format": self.data_format,
                "dilation_rate": self.dilation_rate,
                "activation": activations.serialize(self.activation), "use_bias": self.use_bias,
                "depthwise_initializer": initializers.serialize(self.depthwise_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer),
                "depthwise_regularizer": regularizers.serialize(self.depthwise_regularizer),
                "bias_regularizer": regularizers.serialize(self.bias_regularizer),
                "depthwise_constraint": constraints.serialize(self.depthwise_constraint),
                "bias_constraint": constraints.serialize(self.bias_constraint)}


class DepthwiseConv2D(_DepthwiseBase):
    """``DepthwiseConv2D(3, depth_multiplier=2)``: input (batch, rows, cols, channels), output
    channels * depth_multiplier channels; weights ``kernel`` (kh, kw, channels,
    depth_multiplier) and ``bias``."""
    rank = 2


class DepthwiseConv1D(_DepthwiseBase):
    """``DepthwiseConv1D(3)``: input (batch, steps, channels); ``kernel`` (k, channels,
    depth_multiplier)."""
    rank = 1

    def __init__(self, kernel_size, strides=1, padding="valid", depth_multiplier=1,
                 data_format=None, dilation_rate=1, **kwargs):
        super().__init__(kernel_size, strides, padding, depth_multiplier, data_format,
                         dilation_rate, **kwargs)


class _SeparableBase(_DepthwiseBase):

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

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None,
                 dilation_rate=1, **kwargs):
        super().__init__(filters, kernel_size, strides, padding, data_format, dilation_rate,
                         **kwargs)
