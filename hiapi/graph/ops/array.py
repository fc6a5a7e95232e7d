"""Joining and cutting arrays: concatenate, slice (step 1), pad with zeros.

Slice and pad are each other's transposes (the gradient of one is the other), and the gradient
of concatenate is one slice per input, so all of them differentiate to any order.
"""
import numpy as np

from hiapi.graph.op import Op, as_var, normalize_axes, result_dtype


class Concatenate(Op):
    name = "concatenate"

    def __init__(self, axis):
        self.axis = axis

    def infer(self, *xs):
        ref = xs[0]
        for x in xs[1:]:
            if x.ndim != ref.ndim or any(
                    a is not None and b is not None and a != b
                    for i, (a, b) in enumerate(zip(x.shape, ref.shape)) if i != self.axis):
                raise ValueError(f"concatenate: shapes {[v.shape for v in xs]} differ outside "
                                 f"axis {self.axis}")
        sizes = [x.shape[self.axis] for x in xs]
        shape = list(ref.shape)
        shape[self.axis] = None if None in sizes else sum(sizes)
        return tuple(shape), result_dtype(*xs)

    def grad(self, inputs, y, g):
        if any(x.shape[self.axis] is None for x in inputs):     # sizes known only at run time
            return [ConcatPiece(self.axis, i)(g, *inputs) for i in range(len(inputs))]
        grads, start = [], 0
        for x in inputs:
            size = x.shape[self.axis]
            grads.append(slice_axis(g, self.axis, start, start + size))
            start += size
        return grads


class ConcatPiece(Op):
    """The ``index``-th piece of ``g`` cut along ``axis`` at the run-time sizes of ``parts``
    (whose values are not read): the gradient of a concatenation along an axis whose size is
    only known once the batch is, e.g. ``Concatenate(axis=0)`` on the batch axis, where the
    static ``slice_axis`` has no bounds to cut at."""
    name = "concat_piece"
    view_of = 0

    def __init__(self, axis, index):
        self.axis, self.index = axis, index

    def infer(self, g, *parts):
        shape = list(g.shape)
        shape[self.axis] = parts[self.index].shape[self.axis]
        return tuple(shape), g.dtype

    def grad(self, inputs, y, gg):
        from hiapi.graph.ops.reduce import broadcast_like
        g, *parts = inputs
        zero = as_var(np.zeros((), g.dtype))
        pieces = [gg if i == self.index else broadcast_like(zero, part)
                  for i, part in enumerate(parts)]
        return [Concatenate(self.axis)(*pieces)] + [None] * len(parts)


class Slice(Op):
    """``x[..., start:stop, ...]`` on each axis; ``bounds`` is one (start, stop) per axis,
    with Python's meaning of None and negative values."""
    name = "slice"
    view_of = 0

    def __init__(self, bounds):
        self.bounds = bounds

    def infer(self, x):
        shape = []
        for size, (start, stop) in zip(x.shape, self.bounds):
            if size is None:
                shape.append(None)
            else:
                shape.append(len(range(*slice(start, stop).indices(size))))
        return tuple(shape), x.dtype

    def grad(self, inputs, y, g):
        x = inputs[0]
        pads = []
        for size, (start, stop) in zip(x.shape, self.bounds):
            if size is None:
                if (start, stop) != (None, None):
                    raise ValueError(f"slice: the gradient of {start}:{stop} on an axis of "
                                     f"unknown size (shape {x.shape}) is not supported")
                pads.append((0, 0))
                continue
            lo, hi, _ = slice(start, stop).indices(size)
            pads.append((lo, size - max(hi, lo)))
        return [pad(g, pads)]


class Pad(Op):
    """Zeros around ``x``: ``pads`` is one (before, after) pair per axis."""
    name = "pad"

    def __init__(self, pads):
        self.pads = pads

    def infer(self, x):
        return tuple(None if d is None else d + lo + hi
                     for d, (lo, hi) in zip(x.shape, self.pads)), x.dtype

    def grad(self, inputs, y, g):
        return [Slice(tuple((lo or None, -hi if hi else None) for lo, hi in self.pads))(g)]


def concatenate(xs, axis=-1):
    xs = [as_var(x) for x in xs]
    if len(xs) < 2:
        raise ValueError(f"concatenate: needs at least 2 inputs, got {len(xs)}")
    return Concatenate(normalize_axes("concatenate", axis, xs[0].ndim)[0])(*xs)


def slice_axis(x, axis, start, stop):
    """``x`` restricted to ``start:stop`` along one axis."""
    x = as_var(x)
    axis = normalize_axes("slice", axis, x.ndim)[0]
    bounds = tuple((start, stop) if i == axis else (None, None) for i in range(x.ndim))
    return Slice(bounds)(x)


def pad(x, pads):
    x = as_var(x)
    pads = tuple((int(lo), int(hi)) for lo, hi in pads)
    if len(pads) != x.ndim or any(lo < 0 or hi < 0 for lo, hi in pads):
        raise ValueError(f"pad: need one non-negative (before, after) pair per axis of "
                         f"shape {x.shape}, got {pads}")
    return x if not any(lo or hi for lo, hi in pads) else Pad(pads)(x)


def split(x, num_or_sizes, axis=-1):
    """Equal parts (an int) or parts of the given sizes along ``axis``."""
    x = as_var(x)
    axis = normalize_axes("split", axis, x.ndim)[0]
    size = x.shape[axis]
    if isinstance(num_or_sizes, int):
        if size % num_or_sizes:
            raise ValueError(f"split: axis {axis} of size {size} does not divide into "
                             f"{num_or_sizes} equal parts")
        num_or_sizes = [size // num_or_sizes] * num_or_sizes
    if sum(num_or_sizes) != size:
        raise ValueError(f"split: sizes {list(num_or_sizes)} do not add up to {size}")
    starts = [sum(num_or_sizes[:i]) for i in range(len(num_or_sizes))]
    return [slice_axis(x, axis, s, s + n) for s, n in zip(starts, num_or_sizes)]
