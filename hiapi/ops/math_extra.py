"""More of ``keras.ops`` as composites: trigonometry, ``log1p``/``expm1``, ``any``/``all``,
``norm``, ``moments``, ``tile``/``repeat``/``take``, ``gelu``, ``normalize``. Same rule as the
rest of ``hiapi.ops``: symbolic tensors build graph ops, arrays compute now."""
import math

import numpy as np

from hiapi.graph import ops as O
from hiapi.ops.core import eager_array, is_symbolic


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
