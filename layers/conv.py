"""``Conv2D`` and ``Conv1D`` with Keras's arguments, defaults and kernel layout
(kh, kw, in_channels/groups, filters). ``channels_first`` inputs are transposed to
channels-last around the NHWC op."""
from hiapi import activations, constraints, initializers, regularizers
from hiapi.graph import ops
from hiapi.graph.ops import conv_geometry as geo
from hiapi.layers.input_spec import InputSpec
from hiapi.layers.layer import Layer


class _Conv(Layer):
    rank = 2

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None,
                 dilation_rate=1, groups=1, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, **kwargs):
        super().__init__(**kwargs)
        cls = type(self).__name__
        if not isinstance(filters, int) or filters <= 0:
            raise ValueError(f"{cls} {self.name!r}: filters must be a positive integer, "
                             f"got {filters!r}")
        padding = str(padding).lower()
        geo.check_padding(cls, padding)
        if data_format not in (None, "channels_last", "channels_first"):
            raise ValueError(f"{cls} {self.name!r}: data_format must be channels_last or "
                             f"channels_first, got {data_format!r}")
        if filters % groups:
            raise ValueError(f"{cls} {self.name!r}: filters ({filters}) must be divisible by "
                             f"groups ({groups})")
        self.filters, self.padding, self.groups = filters, padding, groups
        self.kernel_size = self._tuple("kernel_size", kernel_size)
        self.strides = self._tuple("strides", strides)
        self.dilation_rate = self._tuple("dilation_rate", dilation_rate)
        self.data_format = data_format or "channels_last"
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer, self.bias_initializer = kernel_initializer, bias_initializer
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self.input_spec = InputSpec(ndim=self.rank + 2)

    def _tuple(self, name, value):
        values = (value,) * self.rank if isinstance(value, int) else tuple(value)
        if len(values) != self.rank or not all(isinstance(v, int) and v > 0 for v in values):
            raise ValueError(f"{type(self).__name__} {self.name!r}: {name} must be a positive "
                             f"int or {self.rank} of them, got {value!r}")
        return values

    def build(self, input_shape):
        channel_axis = 1 if self.data_format == "channels_first" else -1
        channels = input_shape[channel_axis]
        if channels is None or channels % self.groups:
            raise ValueError(f"{type(self).__name__} {self.name!r}: the channel axis of input "
                             f"shape {input_shape} must be known and divisible by groups "
                             f"({self.groups})")
        self.kernel = self.add_weight(self.kernel_size + (channels // self.groups, self.filters),
                                      self.kernel_initializer, "kernel",
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self.bias = self.add_weight((self.filters,), self.bias_initializer, "bias",
                                    regularizer=self.bias_regularizer,
                                    constraint=self.bias_constraint) if self.use_bias else None
        self.input_spec = InputSpec(ndim=self.rank + 2, axes={channel_axis: channels})
        self.built = True

    def _conv(self, x, kernel, strides, dilation):
        return ops.conv2d(x, kernel, strides, self.padding, dilation, self.groups)

    def call(self, inputs, training=None):
        x = inputs
        if self.data_format == "channels_first":
            x = ops.transpose(x, (0,) + tuple(range(2, x.ndim)) + (1,))
        y = self._apply(x)
        if self.bias is not None:
            y = y + self.bias.read
        y = self.activation(y)
        if self.data_format == "channels_first":
            y = ops.transpose(y, (0, y.ndim - 1) + tuple(range(1, y.ndim - 1)))
        return y

    def get_config(self):
        return {**super().get_config(), "filters": self.filters,
                "kernel_size": self.kernel_size, "strides": self.strides,
                "padding": self.padding, "data_format": self.data_format,
                "dilation_rate": self.dilation_rate, "groups": self.groups,
                "activation": activations.serialize(self.activation), "use_bias": self.use_bias,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer),
                "kernel_regularizer": regularizers.serialize(self.kernel_regularizer),
                "bias_regularizer": regularizers.serialize(self.bias_regularizer),
                "kernel_constraint": constraints.serialize(self.kernel_constraint),
                "bias_constraint": constraints.serialize(self.bias_constraint)}


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

    def __init__(self, filters, kernel_size, strides=1, padding="valid", **kwargs):
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
