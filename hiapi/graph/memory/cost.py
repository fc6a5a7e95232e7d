"""Floating-point operations of each op at concrete shapes: for the memory report's
recomputation cost (and the profiler's roofline later). Multiply-adds count as two."""
import math


def _size(shape):
    return math.prod(shape)


def flops(var, specs):
    name, out = var.op.name, specs[var].shape
    inputs = [specs[i].shape for i in var.inputs]
    if name == "matmul":
        return 2 * _size(out) * inputs[0][-1]
    if name == "gemm":        # alpha * (a @ b) + beta * c: the product, then a scale and an add
        return 2 * _size(out) * inputs[0][-1] + 3 * _size(out)
    if name in ("conv2d", "conv2d_input_grad"):
        # one multiply-add per output (forward) or per gradient element (input gradient) for
        # each tap and input channel of its group: both are the forward's GEMM size
        kh, kw, per_group, _ = inputs[1]
        outputs = _size(out) if name == "conv2d" else _size(inputs[0])
        return 2 * outputs * kh * kw * per_group
    if name == "conv2d_filter_grad":
        return 2 * _size(inputs[1]) * _size(out) // max(out[-1], 1)
    if name == "fused_elementwise":
        return _size(out) * len(var.op.program)
    if var.op.is_source or var.op.view_of is not None:
        return 0
    return max([_size(out)] + [_size(s) for s in inputs])
