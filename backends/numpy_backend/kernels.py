"""numpy kernels: ``kernel(out, *inputs, **attrs)`` writes into ``out``; view kernels return."""
import math

import numpy as np

from hiapi.backends import array_kernels, gemm_bands
from hiapi.backends.numpy_backend.registry import backend
from hiapi.backends.kernel_errors import gather_range_error
from hiapi.backends.splitmix import splitmix64_uniform, splitmix64_uniform_into

register = backend.register
array_kernels.register(backend)        # shape ops, identity, pad: shared with cupy

_UFUNCS = {name: getattr(np, name) for name in (
    "negative", "exp", "log", "sqrt", "tanh", "abs", "add", "subtract", "multiply", "divide",
    "power", "maximum", "minimum", "greater", "greater_equal", "less", "less_equal", "equal",
    "not_equal")}


def _ufunc_kernel(ufunc):
    def kernel(out, *inputs):
        ufunc(*inputs, out=out)
    return kernel


for _name, _ufunc in _UFUNCS.items():
    register(_name)(_ufunc_kernel(_ufunc))


@register("sigmoid")
def sigmoid(out, x):
    # 1 / (1 + exp(-x)) overflows for very negative x; this form never does
    np.exp(-np.abs(x), out=out)
    np.divide(np.where(x >= 0, 1, out), 1 + out, out=out)


@register("relu")
def relu(out, x):
    np.maximum(x, 0, out=out)


@register("cast")
def cast(out, x, dtype):
    out[...] = x


@register("sum")
def sum_(out, x, axis, keepdims):
    # np.sum is this ufunc reduction behind a Python wrapper that cost 1.1 of its 1.6 us on a
    # batch's 32 losses; the same call, the same bits
    np.add.reduce(x, axis=axis, keepdims=keepdims, out=out)


@register("max")
def max_(out, x, axis, keepdims):
    np.maximum.reduce(x, axis=axis, keepdims=keepdims, out=out)        # np.max, unwrapped


@register("argmax")
def argmax(out, x, axis):
    np.argmax(x, axis=axis, out=out)


@register("size")
def size(out, x, axis, dtype):
    out[...] = math.prod([x.shape[a] for a in axis])     # math.prod: np.prod took ~20 us


@register("matmul")
def matmul(out, a, b):
    gemm_bands.matmul(out, a, b)      # the same bits on any number of threads


def _log_softmax(logits):
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


@register("softmax_cross_entropy")
def softmax_cross_entropy(out, logits, labels):
    np.sum(labels * _log_softmax(logits), axis=-1, out=out)
    np.negative(out, out=out)


@register("sparse_softmax_cross_entropy")
def sparse_softmax_cross_entropy(out, logits, labels):
    depth = logits.shape[-1]
    if labels.size and (labels.min() < 0 or labels.max() >= depth):
        bad = labels[(labels < 0) | (labels >= depth)].flat[0]
        raise ValueError(f"sparse categorical cross-entropy: label {bad} is outside the "
                         f"{depth} classes [0, {depth - 1}] of the predictions")
    picked = np.take_along_axis(_log_softmax(logits), labels[..., None].astype(np.intp), -1)
    np.negative(picked[..., 0], out=out)


@register("one_hot")
def one_hot(out, indices, depth, dtype):
    out[...] = 0
    np.put_along_axis(out, indices[..., None].astype(np.intp), 1, axis=-1)


@register("gather")
def gather(out, table, indices, where):
    rows = table.shape[0]
    if indices.size and (indices.min() < 0 or indices.max() >= rows):
        bad = indices[(indices < 0) | (indices >= rows)].flat[0]
        raise ValueError(gather_range_error(where, bad, rows))
    # checked above, so "clip" changes nothing; it spares numpy's buffered copy for "raise"
    np.take(table, indices, axis=0, out=out, mode="clip")


@register("scatter_add")
def scatter_add(out, updates, indices, like):
    out[...] = 0
    np.add.at(out, indices, updates)


@register("concatenate")
def concatenate(out, *xs, axis):
    np.concatenate(xs, axis=axis, out=out)


@register("random_uniform")
def random_uniform(out, like, counter, seed):
    if out.flags.c_contiguous:          # planned buffers are: bounded temporaries, in chunks
        splitmix64_uniform_into(out, seed, int(counter))
    else:
        out[...] = splitmix64_uniform(np, out.shape, seed, int(counter))
