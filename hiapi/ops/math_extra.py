"""More of ``keras.ops`` as composites: trigonometry, ``log1p``/``expm1``, ``any``/``all``,
``norm``, ``moments``, ``tile``/``repeat``/``take``, ``gelu``, ``normalize``. Same rule as the
rest of ``hiapi.ops``: symbolic tensors build graph ops, arrays compute now."""
import math

import numpy as np

from hiapi.graph import ops as O
from hiapi.graph.op import as_var
from hiapi.ops.core import eager_array, is_symbolic, standardize_dtype


def sin(x):
    return O.sin(x) if is_symbolic(x) else np.sin(eager_array(x))


def cos(x):
    return O.cos(x) if is_symbolic(x) else np.cos(eager_array(x))


def log1p(x):
    """``log(1 + x)``; symbolically written as such (no extra precision for tiny x)."""
    return O.log(1.0 + x) if is_symbolic(x) else np.log1p(eager_array(x))


def expm1(x):
    return O.exp(x) - 1.0 if is_symbolic(x) else np.expm1(eager_array(x))


def any(x, axis=None, keepdims=False):
    if not is_symbolic(x):
        return np.any(eager_array(x), axis=axis, keepdims=keepdims)
    return O.greater(O.max(O.cast(O.not_equal(x, 0), "int32"), axis, keepdims), 0)


def all(x, axis=None, keepdims=False):
    if not is_symbolic(x):
        return np.all(eager_array(x), axis=axis, keepdims=keepdims)
    return O.greater(O.min(O.cast(O.not_equal(x, 0), "int32"), axis, keepdims), 0)


def norm(x, ord=None, axis=None, keepdims=False):
    """The L2 norm (``ord=None`` or 2 over one axis, Frobenius over all) or L1 (``ord=1``)."""
    if not is_symbolic(x):
        return np.linalg.norm(eager_array(x), ord=ord, axis=axis, keepdims=keepdims)
    if ord in (None, 2, "fro"):
        return O.sqrt(O.sum(x * x, axis, keepdims))
    if ord == 1:
        return O.sum(O.abs(x), axis, keepdims)
    raise ValueError(f"norm: on symbolic tensors ord must be None, 2, 'fro' or 1, got {ord!r}")


def moments(x, axes, keepdims=False):
    """``(mean, variance)`` over ``axes``, as ``keras.ops.moments``."""
    if not is_symbolic(x):
        x = eager_array(x)
        return np.mean(x, axis=tuple(axes), keepdims=keepdims), \
            np.var(x, axis=tuple(axes), keepdims=keepdims)
    return O.mean(x, axes, keepdims), O.var(x, axes, keepdims)


def tile(x, repeats):
    if not is_symbolic(x):
        return np.tile(eager_array(x), repeats)
    repeats = (repeats,) if isinstance(repeats, int) else tuple(repeats)
    repeats = (1,) * (x.ndim - len(repeats)) + repeats
    if len(repeats) > x.ndim:
        x = O.reshape(x, (1,) * (len(repeats) - x.ndim) + tuple(-1 if d is None else d
                                                               for d in x.shape))
    for axis, count in enumerate(repeats):
        if count != 1:
            x = O.concatenate([x] * count, axis) if count > 1 else O.slice_axis(x, axis, 0, 0)
    return x


def repeat(x, repeats, axis=None):
    """Each element ``repeats`` times along ``axis`` (flattened first when None)."""
    if not is_symbolic(x):
        return np.repeat(eager_array(x), repeats, axis=axis)
    if not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeat: on symbolic tensors repeats must be a positive int, got "
                         f"{repeats!r}")
    if axis is None:
        x, axis = O.reshape(x, (-1,)), 0
    axis = axis % x.ndim
    stacked = O.stack([x] * repeats, axis + 1)
    shape = [-1 if d is None else d for d in x.shape]
    shape[axis] = -1 if x.shape[axis] is None else x.shape[axis] * repeats
    return O.reshape(stacked, shape)


def take(x, indices, axis=None):
    """Elements of ``x`` at integer ``indices`` along ``axis`` (0, or the flattened x)."""
    if not is_symbolic(x, indices):
        return np.take(eager_array(x), np.asarray(indices), axis=axis)
    if axis is None:
        x, axis = O.reshape(x, (-1,)), 0
    if axis % x.ndim != 0:
        moved = [axis % x.ndim] + [i for i in range(x.ndim) if i != axis % x.ndim]
        taken = O.gather(O.transpose(x, moved), indices)
        index_ndim = np.ndim(indices) if not is_symbolic(indices) else indices.ndim
        back = list(range(index_ndim, index_ndim + axis % x.ndim)) + \
            list(range(index_ndim)) + list(range(index_ndim + axis % x.ndim, taken.ndim))
        return O.transpose(taken, back)
    return O.gather(x, indices if is_symbolic(indices) else np.asarray(indices))


def gelu(x, approximate=True):
    """Gaussian error linear unit; ``approximate=True`` (Keras's default) is the tanh form.
    The exact form needs erf, which hiapi's graph does not have: on symbolic tensors it is an
    error rather than a silent approximation."""
    if not is_symbolic(x):
        x = eager_array(x)
        if approximate:
            return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
        from math import erf
        return x * 0.5 * (1 + np.vectorize(erf)(x / math.sqrt(2))).astype(x.dtype)
    if not approximate:
        raise ValueError("gelu(approximate=False) needs erf, which hiapi's graph does not "
                         "have; use approximate=True (the tanh form, Keras's default)")
    return 0.5 * x * (1.0 + O.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x * x * x)))


def normalize(x, axis=-1, order=2):
    """``x`` divided by its L2 norm along ``axis`` (floored at 1e-12 as in Keras)."""
    if order != 2:
        raise ValueError(f"normalize: only order=2 is supported, got {order!r}")
    if not is_symbolic(x):
        x = eager_array(x)
        return x / np.sqrt(np.maximum(np.sum(x * x, axis=axis, keepdims=True), 1e-12))
    return x / O.sqrt(O.maximum(O.sum(x * x, axis, keepdims=True), 1e-12))


def logsumexp(x, axis=None, keepdims=False):
    """``log(sum(exp(x)))`` over ``axis``, shifted by the maximum so it cannot overflow."""
    if not is_symbolic(x):
        x = eager_array(x)
        m = np.max(x, axis=axis, keepdims=True)
        out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
        return out if keepdims else np.squeeze(out, axis=axis)
    m = O.stop_gradient(O.max(x, axis, keepdims=True))
    out = O.log(O.sum(O.exp(x - m), axis, keepdims=True)) + m
    return out if keepdims else O.squeeze(out, tuple(range(x.ndim)) if axis is None else axis)


def log2(x):
    return O.log(x) * (1 / math.log(2)) if is_symbolic(x) else np.log2(eager_array(x))


def log10(x):
    return O.log(x) * (1 / math.log(10)) if is_symbolic(x) else np.log10(eager_array(x))


def broadcast_to(x, shape):
    """``x`` repeated along broadcast axes to ``shape`` (a known shape)."""
    if not is_symbolic(x):
        return np.broadcast_to(eager_array(x), shape).copy()
    like = O.constant(np.zeros(tuple(shape), np.dtype(x.dtype)))
    return O.broadcast_like(x, like)


def outer(x1, x2):
    """Outer product of the flattened operands (numpy's ``outer``)."""
    if not is_symbolic(x1, x2):
        return np.outer(eager_array(x1), eager_array(x2))
    return O.reshape(x1, (-1, 1)) * O.reshape(x2, (1, -1))


def average(x, axis=None, weights=None):
    """Mean, or the ``weights``-weighted mean, over ``axis`` (numpy's ``average``)."""
    if not is_symbolic(x, weights):
        return np.average(eager_array(x), axis=axis, weights=weights)
    if weights is None:
        return O.mean(x, axis)
    x, weights = as_var(x), as_var(weights)
    if axis is not None and weights.ndim == 1 and x.ndim > 1:   # numpy: weights along axis
        shape = [1] * x.ndim
        shape[axis] = -1
        weights = O.reshape(weights, shape)
    return O.sum(x * weights, axis) / O.sum(O.broadcast_like(weights, x), axis)


def _triangle(x, k, lower):
    if not is_symbolic(x):
        return (np.tril if lower else np.triu)(eager_array(x), k)
    rows, cols = x.shape[-2:]
    if rows is None or cols is None:
        raise ValueError(f"{'tril' if lower else 'triu'}: the last two axes need known sizes, "
                         f"got shape {x.shape}")
    keep = (np.tril if lower else np.triu)(np.ones((rows, cols), bool), k)
    return O.where(keep, x, O.cast(0, x.dtype))


def tril(x, k=0):
    """``x`` with the entries above the ``k``-th diagonal of its last two axes zeroed."""
    return _triangle(x, k, True)


def triu(x, k=0):
    return _triangle(x, k, False)


def eye(N, M=None, k=0, dtype=None):
    return np.eye(N, M, k, dtype=standardize_dtype(dtype))


def identity(n, dtype=None):
    return eye(n, dtype=dtype)


def linspace(start, stop, num=50, endpoint=True, dtype=None):
    return np.linspace(start, stop, num, endpoint=endpoint, dtype=standardize_dtype(dtype))


def hard_sigmoid(x):
    """``relu6(x + 3) / 6``, Keras 3's definition."""
    if not is_symbolic(x):
        return np.clip(eager_array(x) + 3.0, 0.0, 6.0) / 6.0
    return O.clip(x + 3.0, 0.0, 6.0) * (1 / 6)


def hard_silu(x):
    return x * hard_sigmoid(x) if is_symbolic(x) else eager_array(x) * hard_sigmoid(x)


hard_swish = hard_silu


def log_sigmoid(x):
    """``-softplus(-x)``, stable for large |x|."""
    if not is_symbolic(x):
        return -np.logaddexp(0, -eager_array(x))
    return -(O.maximum(-x, 0) + O.log(1.0 + O.exp(-O.abs(x))))


def selu(x):
    alpha, scale = 1.6732632423543772, 1.0507009873554805
    if not is_symbolic(x):
        x = eager_array(x)
        return scale * np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))
    return scale * O.where(x > 0, x, alpha * (O.exp(O.minimum(x, 0)) - 1.0))


def softsign(x):
    return x / (1.0 + O.abs(x)) if is_symbolic(x) else \
        eager_array(x) / (1 + np.abs(eager_array(x)))
