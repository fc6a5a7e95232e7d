"""Sizes and paddings of sliding windows (convolution, pooling), shared by ops and kernels.

Keras/TensorFlow conventions: "valid" uses no padding; "same" pads so the output has
ceil(size / stride) positions, putting the odd extra padding at the end (bottom/right).
"""
import math


def window_extent(kernel, dilation):
    return (kernel - 1) * dilation + 1


def output_size(size, kernel, stride, dilation, padding):
    if size is None:
        return None
    if padding == "same":
        return math.ceil(size / stride)
    extent = window_extent(kernel, dilation)
    return (size - extent) // stride + 1 if size >= extent else 0


def pads(size, kernel, stride, dilation, padding):
    """(before, after) padding along one spatial axis."""
    if padding == "valid":
        return 0, 0
    out = math.ceil(size / stride)
    total = max((out - 1) * stride + window_extent(kernel, dilation) - size, 0)
    return total // 2, total - total // 2


def check_padding(op_name, padding):
    if padding not in ("valid", "same"):
        raise ValueError(f"{op_name}: padding must be 'valid' or 'same', got {padding!r}")


def pair(op_name, name, value):
    """An (h, w) pair from an int or a 2-sequence of positive ints."""
    pair_ = (value, value) if isinstance(value, int) else tuple(value)
    if len(pair_) != 2 or not all(isinstance(v, int) and v > 0 for v in pair_):
        raise ValueError(f"{op_name}: {name} must be a positive int or a pair of them, "
                         f"got {value!r}")
    return pair_
