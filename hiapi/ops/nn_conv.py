"""``keras.ops.conv``, ``max_pool`` and ``average_pool`` for custom layers: 1-D and 2-D, either
data format, on symbolic tensors (the graph's conv2d/pool2d ops; 1-D is 2-D on one row) and on
arrays (the same graph compiled once per shape and run)::

    y = ops.conv(x, kernel, strides=1, padding="same")     # kernel (kh, kw, in, out)
"""
from hiapi.graph import ops as O
from hiapi.ops.core import is_symbolic
from hiapi.runtime.settings import image_data_format
from hiapi.utils.eager import run_eagerly


def conv(inputs, kernel, strides=1, padding="valid", data_format=None, dilation_rate=1):
    """Convolution (cross-correlation, as Keras) of (batch, *spatial, channels) inputs with a
    (*kernel_size, in_channels / groups, filters) kernel; grouped when the kernel has fewer input
    channels than the inputs."""
    data_format = data_format or image_data_format()   # resolved now: it is in the cache key
    def build(x, w):
        return _spatial("conv", x, data_format, lambda y, one_d: O.conv2d(
            y, O.expand_dims(w, 0) if one_d else w, _pair(strides, one_d), padding.lower(),
            _pair(dilation_rate, one_d), _groups(y, w)))
    if is_symbolic(inputs, kernel):
        return build(inputs, kernel)
    return run_eagerly(build, [inputs, kernel], key=("conv", strides, padding, data_format,
                                                     dilation_rate))


def max_pool(inputs, pool_size, strides=None, padding="valid", data_format=None):
    return _pool(O.max_pool2d, "max_pool", inputs, pool_size, strides, padding, data_format)


def average_pool(inputs, pool_size, strides=None, padding="valid", data_format=None):
    return _pool(O.avg_pool2d, "average_pool", inputs, pool_size, strides, padding, data_format)


def _pool(graph_fn, name, inputs, pool_size, strides, padding, data_format):
    data_format = data_format or image_data_format()   # resolved now: it is in the cache key
    def build(x):
        return _spatial(name, x, data_format, lambda y, one_d: graph_fn(
            y, _pair(pool_size, one_d), None if strides is None else _pair(strides, one_d),
            padding.lower()))
    if is_symbolic(inputs):
        return build(inputs)
    return run_eagerly(build, [inputs], key=(name, pool_size, strides, padding, data_format))


def _spatial(name, x, data_format, fn):
    """Run ``fn(nhwc, one_d)`` on ``x`` laid out as NHWC, and lay the result out like ``x``."""
    if x.ndim not in (3, 4):
        raise ValueError(f"{name}: inputs must have rank 3 (1-D) or 4 (2-D) with the batch "
                         f"axis, got shape {x.shape}")
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(f"{name}: data_format must be 'channels_last' or 'channels_first', "
                         f"got {data_format!r}")
    first = data_format == "channels_first"
    if first:
        x = O.transpose(x, (0,) + tuple(range(2, x.ndim)) + (1,))
    one_d = x.ndim == 3
    y = fn(O.expand_dims(x, 1) if one_d else x, one_d)
    y = O.squeeze(y, 1) if one_d else y
    return O.transpose(y, (0, y.ndim - 1) + tuple(range(1, y.ndim - 1))) if first else y


def _pair(value, one_d):
    if isinstance(value, int):
        return (1, value) if one_d else (value, value)
    value = tuple(value)
    return (1,) + value if one_d else value


def _groups(x, w):
    channels, per_group = x.shape[-1], w.shape[-2]
    if channels is None or per_group is None or channels % per_group:
        raise ValueError(f"conv: the inputs' {channels} channels are not a multiple of the "
                         f"kernel's {per_group} input channels (kernel shape {w.shape})")
    return channels // per_group
