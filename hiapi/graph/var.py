"""``Var``: a symbolic tensor, the edge of the computation graph.

A Var is the output of one ``Op`` applied to input Vars. It carries a shape (``None`` for the batch
dimension, bound when a ``Function`` is compiled for concrete inputs) and a numpy dtype. Python
operators build ops with numpy's names and broadcasting rules, so graph code reads like numpy::

    x = hiapi.graph.placeholder((None, 3))
    y = (x * 2.0 + 1.0).sum(axis=1)

Vars hash by identity (``==`` is not overloaded: use ``hiapi.graph.ops.equal``), so they can be
dictionary keys in autodiff and scheduling.
"""
import numpy as np

from hiapi.graph.op_namespace import ops


class Var:
    __slots__ = ("op", "inputs", "shape", "dtype", "name", "recompute", "_keras_history",
                 "_keras_logits", "_keras_mask", "__weakref__")

    def __init__(self, op, inputs, shape, dtype, name=None):
        self.op = op
        self.inputs = tuple(inputs)
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.name = name
        self.recompute = False       # a copy made by sublinear memory planning
        self._keras_history = None   # (layer, call inputs) when produced by a layer call
        self._keras_logits = None    # pre-activation Var when this is softmax/sigmoid output
        self._keras_mask = None      # boolean Var (batch, steps): which time steps are real data
        for watcher in _watchers:     # a GradientTape's stop_recording block
            watcher.append(self)

    @property
    def ndim(self):
        return len(self.shape)

    def __repr__(self):
        shape = "(" + ", ".join("None" if d is None else str(d) for d in self.shape) + \
            ("," if len(self.shape) == 1 else "") + ")"
        label = f" name={self.name!r}" if self.name else ""
        return f"<Var {self.op.name} shape={shape} dtype={self.dtype.name}{label}>"

    def __bool__(self):
        raise TypeError("A symbolic Var has no truth value: it holds no data until the graph "
                        "is run. Use hiapi.graph.ops.where() for data-dependent choices.")

    # numpy defers to the reflected operator: ``np_array + var`` builds an add op instead of an
    # object array of Vars (found by the layer fuzzer in Normalization(invert=True))
    __array_ufunc__ = None

    # numpy-style operators; imported lazily to keep var.py free of op definitions
    def __add__(self, other): return ops.add(self, other)
    def __radd__(self, other): return ops.add(other, self)
    def __sub__(self, other): return ops.subtract(self, other)
    def __rsub__(self, other): return ops.subtract(other, self)
    def __mul__(self, other): return ops.multiply(self, other)
    def __rmul__(self, other): return ops.multiply(other, self)
    def __truediv__(self, other): return ops.divide(self, other)
    def __rtruediv__(self, other): return ops.divide(other, self)
    def __pow__(self, other): return ops.power(self, other)
    def __rpow__(self, other): return ops.power(other, self)
    def __matmul__(self, other): return ops.matmul(self, other)
    def __rmatmul__(self, other): return ops.matmul(other, self)
    def __neg__(self): return ops.negative(self)
    def __getitem__(self, key): return ops.getitem(self, key)
    def __gt__(self, other): return ops.greater(self, other)
    def __ge__(self, other): return ops.greater_equal(self, other)
    def __lt__(self, other): return ops.less(self, other)
    def __le__(self, other): return ops.less_equal(self, other)
    __hash__ = object.__hash__

    @property
    def T(self):
        return ops.transpose(self)

    def reshape(self, *shape):
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        return ops.reshape(self, shape)

    def transpose(self, *axes):
        axes = axes[0] if len(axes) == 1 and isinstance(axes[0], (tuple, list)) else axes
        return ops.transpose(self, axes or None)

    def sum(self, axis=None, keepdims=False): return ops.sum(self, axis, keepdims)
    def mean(self, axis=None, keepdims=False): return ops.mean(self, axis, keepdims)
    def max(self, axis=None, keepdims=False): return ops.max(self, axis, keepdims)
    def astype(self, dtype): return ops.cast(self, dtype)


_watchers: list = []      # lists that collect every Var made while they are in here
