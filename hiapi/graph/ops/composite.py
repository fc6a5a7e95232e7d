"""Reductions and array helpers written as composites of primitive ops: min, argmin, prod, var,
std, clip, stack.

None of them needs a kernel of its own (tinygrad's habit: keep the primitive set small), and
their gradients come from the primitives', so they differentiate to any order. ``prod`` is a
balanced tree of pairwise products over slices: log2(n) multiplies, an exact gradient even where
an element is zero (unlike ``y / x``), no log/exp round trip.
"""
import math

from hiapi.graph.op_namespace import ops as O
from hiapi.graph.op import as_var, normalize_axes


def min(x, axis=None, keepdims=False):
    """Minimum over ``axis``: ``-max(-x)``, so tied minima share the gradient as in ``max``."""
    return O.negative(O.max(O.negative(as_var(x)), axis, keepdims))


def argmin(x, axis=-1):
    return O.argmax(O.negative(as_var(x)), axis)


def prod(x, axis=None, keepdims=False):
    """Product over ``axis``; the reduced axes must have known sizes."""
    x = as_var(x)
    axes = normalize_axes("prod", axis, x.ndim)
    unknown = [a for a in axes if x.shape[a] is None]
    if unknown:
        raise ValueError(f"prod: axis {unknown[0]} of shape {x.shape} has an unknown size; "
                         f"prod reduces only axes of known size")
    keep = [i for i in range(x.ndim) if i not in axes]
    n = math.prod(x.shape[a] for a in axes)
    kept = [x.shape[i] for i in keep]
    y = O.reshape(O.transpose(x, keep + list(axes)), [-1 if d is None else d for d in kept] + [n])
    if n == 0:
        y = O.sum(y, -1, keepdims=True) + 1    # the empty product is 1
        n = 1
    while n > 1:
        half = n // 2
        pairs = O.slice_axis(y, -1, 0, half) * O.slice_axis(y, -1, half, 2 * half)
        y = O.concatenate([pairs, O.slice_axis(y, -1, 2 * half, n)], -1) if n % 2 else pairs
        n = half + n % 2
    y = O.squeeze(y, -1)
    return O.expand_dims(y, axes) if keepdims and axes else y


def var(x, axis=None, keepdims=False):
    """Population variance (numpy's default ``ddof=0``, as ``keras.ops.var``)."""
    x = as_var(x)
    centred = x - O.mean(x, axis, keepdims=True)
    return O.mean(centred * centred, axis, keepdims)


def std(x, axis=None, keepdims=False):
    return O.sqrt(var(x, axis, keepdims))


def clip(x, x_min, x_max):
    """Values of ``x`` limited to ``[x_min, x_max]``; the gradient passes where x is inside."""
    return O.minimum(O.maximum(x, x_min), x_max)


def stack(xs, axis=0):
    """Join same-shaped arrays along a new axis ``axis``."""
    xs = [as_var(x) for x in xs]
    if not xs:
        raise ValueError("stack: needs at least one input, got an empty list")
    axis = normalize_axes("stack", axis, xs[0].ndim + 1)[0]
    shapes = {x.shape for x in xs}
    if len(shapes) > 1:
        raise ValueError(f"stack: all inputs must have the same shape, got "
                         f"{[x.shape for x in xs]}")
    expanded = [O.expand_dims(x, axis) for x in xs]
    return expanded[0] if len(expanded) == 1 else O.concatenate(expanded, axis)
