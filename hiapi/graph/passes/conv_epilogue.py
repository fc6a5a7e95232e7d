"""Convolution epilogue fusion: ``relu(conv2d(x, w) + b)`` becomes one ``conv2d_epilogue`` op
(``hiapi.graph.ops.conv_epilogue``), whose kernel adds the bias and applies the relu to each
piece of the convolution's output while the piece is still in cache.

Two rules, applied bottom-up so that they compose:

    add(conv2d(x, w), b)                    -> conv2d_epilogue(x, w, b, activation=None)
    relu(conv2d_epilogue(x, w, b, None))    -> conv2d_epilogue(x, w, b, activation="relu")

where ``b`` is a vector of the filters' size and the inner value has no other reader (after
autodiff the relu gradient reads the relu's output and the bias gradient reads the incoming
gradient, so in a training step the convolution and the sum are read once). It runs before
elementwise fusion, which would otherwise take the add and the relu into a loop of their
own, and only when the current backend has the kernel.
"""
from collections import Counter

from hiapi.backends import get_backend
from hiapi.graph.ops.conv_epilogue import conv2d_epilogue
from hiapi.graph.passes.rewrite import rewrite, with_inputs
from hiapi.graph.schedule import topological_order

KERNEL = "conv2d_epilogue"


def run(roots):
    if KERNEL not in get_backend().kernels:
        return roots
    order = topological_order(roots)
    readers = Counter(i for v in order for i in v.inputs)
    readers.update(roots)

    def only_read_once(var):
        return readers[var] == 1 and not var.recompute

    def transform(var, inputs):
        if var.recompute:
            return with_inputs(var, inputs)
        if var.op.name == "add":
            return _bias(var, inputs, only_read_once)
        if var.op.name == "relu" and inputs[0].op.name == KERNEL and \
                inputs[0].op.activation is None and only_read_once(var.inputs[0]):
            return _epilogue(inputs[0].inputs, inputs[0].op, "relu")
        return with_inputs(var, inputs)

    return rewrite(roots, transform)


def _bias(var, inputs, only_read_once):
    """``add(conv, b)`` or ``add(b, conv)`` with a bias vector ``b``, as an epilogue."""
    for k in (0, 1):
        conv, bias = inputs[k], inputs[1 - k]
        if conv.op.name == "conv2d" and only_read_once(var.inputs[k]) and \
                bias.ndim == 1 and bias.shape == conv.shape[3:] and \
                bias.dtype == conv.dtype == var.dtype and var.shape == conv.shape:
            return _epilogue((*conv.inputs, bias), conv.op, None)
    return with_inputs(var, inputs)


def _epilogue(inputs, conv_op, activation):
    x, w, b = inputs
    return conv2d_epilogue(x, w, b, activation, strides=conv_op.strides,
                           padding=conv_op.padding, dilation=conv_op.dilation,
                           groups=conv_op.groups)
