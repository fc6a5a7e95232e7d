"""Reductions (sum, max, argmax), the element count, and broadcasting back for their gradients."""
import math

import numpy as np

from hiapi.graph.op_namespace import ops as O
from hiapi.graph.op import Op, as_var, broadcast_shapes, normalize_axes


def _reduced_shape(shape, axes, keepdims):
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


class Reduce(Op):
    def __init__(self, axis, keepdims):
        self.axis = axis            # normalized tuple, set by the builder
        self.keepdims = bool(keepdims)

    def infer(self, x):
        return _reduced_shape(x.shape, self.axis, self.keepdims), x.dtype

    def _expand(self, v):
        """``v`` with the reduced axes put back as size 1."""
        return v if self.keepdims or not self.axis else O.expand_dims(v, self.axis)


class Sum(Reduce):
    name = "sum"

    def infer(self, x):
        shape, dtype = super().infer(x)
        return shape, (np.dtype(np.int64) if dtype.kind in "biu" else dtype)

    def grad(self, inputs, y, g):
        return [broadcast_like(self._expand(g), inputs[0])]


class Max(Reduce):
    """Maximum; the gradient is shared equally between tied maxima (as TensorFlow does)."""
    name = "max"

    def grad(self, inputs, y, g):
        x = inputs[0]
        mask = O.cast(O.equal(x, self._expand(y)), x.dtype)
        count = sum(mask, self.axis, keepdims=True)
        return [mask * (self._expand(g) / count)]


class ArgMax(Op):
    name = "argmax"

    def __init__(self, axis):
        self.axis = axis

    def infer(self, x):
        return _reduced_shape(x.shape, (self.axis,), False), np.dtype(np.int64)

    def grad(self, inputs, y, g):
        return [None]


class Size(Op):
    """Number of elements over ``axis`` as a scalar of ``dtype``: known only once the batch
    size is, which is why ``mean`` needs it as an op rather than a Python number."""
    name = "size"

    def __init__(self, axis, dtype):
        self.axis = axis
        self.dtype = np.dtype(dtype)

    def infer(self, x):
        return (), self.dtype

    def value_from_shapes(self, x):
        return np.asarray(math.prod(x.shape[a] for a in self.axis), self.dtype)

    def grad(self, inputs, y, g):
        return [None]


class BroadcastLike(Op):
    """``x`` broadcast to the shape of ``like`` (whose values are not read)."""
    name = "broadcast_like"

    def infer(self, x, like):
        shape = broadcast_shapes("broadcast_like", x.shape, like.shape)
        if len(shape) != like.ndim or any(a != b for a, b in zip(shape, like.shape)
                                          if a is not None and b is not None):
            raise ValueError(f"broadcast_like: cannot broadcast {x.shape} to {like.shape}")
        return like.shape, x.dtype

    def grad(self, inputs, y, g):
        return [unbroadcast(g, inputs[0]), None]


def sum(x, axis=None, keepdims=False):
    x = as_var(x)
    return Sum(normalize_axes("sum", axis, x.ndim), keepdims)(x)


def max(x, axis=None, keepdims=False):
    x = as_var(x)
    return Max(normalize_axes("max", axis, x.ndim), keepdims)(x)


def argmax(x, axis=-1):
    x = as_var(x)
    x, axis = (O.reshape(x, (-1,)), 0) if axis is None else (x, axis)   # numpy: a flat index
    return ArgMax(normalize_axes("argmax", axis, x.ndim)[0])(x)


def size(x, axis=None, dtype=None):
    x = as_var(x)
    return Size(normalize_axes("size", axis, x.ndim), dtype or x.dtype)(x)


def mean(x, axis=None, keepdims=False):
    x = as_var(x)
    dtype = x.dtype if x.dtype.kind == "f" else np.dtype(np.float64)
    return O.divide(O.cast(sum(x, axis, keepdims), dtype), size(x, axis, dtype))


def broadcast_like(x, like):
    x = as_var(x)
    return x if x.shape == like.shape and None not in x.shape else BroadcastLike()(x, like)


class SumLike(Op):
    """``g`` summed down to the runtime shape of ``like`` (numpy broadcasting in reverse): for
    the gradient of a broadcast whose stretched axes are only known once the batch size is."""
    name = "sum_like"

    def infer(self, g, like):
        return like.shape, g.dtype

    def grad(self, inputs, y, gg):
        return [broadcast_like(gg, inputs[0]), None]


def unbroadcast(g, like):
    """Sum ``g`` over the axes that broadcasting added or stretched, giving ``like``'s shape.

    Decided statically when the shapes tell; when an axis of ``like`` is unknown (the batch)
    but ``g``'s is not, it may be 1 at run time, so a ``sum_like`` op decides then."""
    shape = like.shape
    if any(d is None and gd is not None for d, gd in zip(shape[::-1], g.shape[::-1])):
        return SumLike()(g, like)
    lead = g.ndim - len(shape)
    if lead:
        g = sum(g, tuple(range(lead)))
    stretched = tuple(i for i, (d, gd) in enumerate(zip(shape, g.shape)) if d == 1 and gd != 1)
    return sum(g, stretched, keepdims=True) if stretched else g
