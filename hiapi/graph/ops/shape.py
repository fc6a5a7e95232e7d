"""Ops that change how elements are indexed but not their values: reshape, transpose, and
adding or removing size-1 axes. Their outputs are views of their input where the backend can
make one, which the memory planner can forward without a copy."""
import math

from hiapi.graph.op import Op, as_var, normalize_axes


def _fmt(shape):
    return "(" + ", ".join("None" if d is None else str(d) for d in shape) + ")"


class Reshape(Op):
    name = "reshape"
    view_of = 0

    def __init__(self, shape):
        self.shape = shape

    def infer(self, x):
        target = list(self.shape)
        if target.count(-1) > 1:
            raise ValueError(f"reshape: at most one -1 is allowed, got shape {self.shape}")
        known = math.prod(d for d in target if d != -1)
        if None in x.shape:
            if -1 not in target:
                raise ValueError(f"reshape: input of shape {_fmt(x.shape)} has an unknown "
                                 f"dimension; the target {self.shape} needs a -1 for it")
            target[target.index(-1)] = None
            return tuple(target), x.dtype
        total = math.prod(x.shape)
        if -1 in target:
            if known == 0 or total % known:
                raise ValueError(f"reshape: cannot reshape {_fmt(x.shape)} ({total} elements) "
                                 f"into {self.shape}")
            target[target.index(-1)] = total // known
        elif known != total:
            raise ValueError(f"reshape: cannot reshape {_fmt(x.shape)} ({total} elements) into "
                             f"{self.shape} ({known} elements)")
        return tuple(target), x.dtype

    def grad(self, inputs, y, g):
        return [reshape_like(g, inputs[0])]


class Transpose(Op):
    name = "transpose"
    view_of = 0

    def __init__(self, axes):
        self.axes = axes

    def infer(self, x):
        return tuple(x.shape[a] for a in self.axes), x.dtype

    def grad(self, inputs, y, g):
        inverse = tuple(sorted(range(len(self.axes)), key=self.axes.__getitem__))
        return [transpose(g, inverse)]


class ExpandDims(Op):
    name = "expand_dims"
    view_of = 0

    def __init__(self, axis):
        self.axis = axis      # sorted positions in the output

    def infer(self, x):
        shape = list(x.shape)
        for a in self.axis:
            shape.insert(a, 1)
        return tuple(shape), x.dtype

    def grad(self, inputs, y, g):
        return [squeeze(g, self.axis)]


class Squeeze(Op):
    name = "squeeze"
    view_of = 0

    def __init__(self, axis):
        self.axis = axis

    def infer(self, x):
        bad = [a for a in self.axis if x.shape[a] not in (1, None)]
        if bad:
            raise ValueError(f"squeeze: axis {bad[0]} of shape {_fmt(x.shape)} has size "
                             f"{x.shape[bad[0]]}, not 1")
        return tuple(d for i, d in enumerate(x.shape) if i not in self.axis), x.dtype

    def grad(self, inputs, y, g):
        return [expand_dims(g, self.axis)]


def reshape(x, shape):
    x = as_var(x)
    return Reshape(tuple(int(d) for d in shape))(x)


def reshape_like(x, like):
    """Reshape ``x`` to the shape of ``like``; at most one unknown dimension."""
    if like.shape.count(None) > 1:
        raise ValueError(f"reshape: cannot restore shape {_fmt(like.shape)} with more than one "
                         f"unknown dimension")
    return reshape(x, tuple(-1 if d is None else d for d in like.shape))


def transpose(x, axes=None):
    x = as_var(x)
    axes = tuple(reversed(range(x.ndim))) if axes is None else tuple(int(a) % x.ndim for a in axes)
    if sorted(axes) != list(range(x.ndim)):
        raise ValueError(f"transpose: axes {axes} are not a permutation of {tuple(range(x.ndim))}")
    return x if axes == tuple(range(x.ndim)) else Transpose(axes)(x)


def swapaxes(x, a, b):
    axes = list(range(x.ndim))
    axes[a], axes[b] = axes[b], axes[a]
    return transpose(x, axes)


def expand_dims(x, axis):
    x = as_var(x)
    axis = (axis,) if isinstance(axis, int) else tuple(axis)
    return ExpandDims(normalize_axes("expand_dims", axis, x.ndim + len(axis)))(x)


def squeeze(x, axis):
    x = as_var(x)
    return Squeeze(normalize_axes("squeeze", axis, x.ndim))(x)


class Identity(Op):
    """The same value as a new Var: a layer that computes nothing still gets its own output."""
    name = "identity"
    view_of = 0

    def infer(self, x):
        return x.shape, x.dtype

    def grad(self, inputs, y, g):
        return [g]


def identity(x):
    return Identity()(as_var(x))
