"""``Var``: a symbolic tensor, the edge of the computation graph.

A Var is the output of one ``Op`` applied to input Vars. It carries a shape (``None`` for the batch
dimension, bound when a ``Function`` is compiled for concrete inputs) and a numpy dtype. Python
operators build ops with numpy's names and broadcasting rules, so graph code reads like numpy::

    x = hiapi.graph.placeholder((None, 3))
    y = (x * 2.0 + 1.0).sum(axis=1)

Vars hash by identity (``==`` is not overloaded: use ``hiapi.graph.ops.equal``), so they can be
dictionary keys in autodiff and scheduling.

A Var made under an eager ``GradientTape`` also has a value once it was computed (``_value``,
``hiapi.graph.eager_tape``): ``float(loss)``, ``logits.numpy()`` and ``np.asarray(logits)``
read it (computing it first if need be), and outside a trace its operators compute with it,
as TensorFlow's eager tensors do. A Var that stands for data not yet given (a placeholder, a
``keras.Input``) has none, and reading one says so.
"""
import numpy as np

from hiapi.graph import tracing
from hiapi.graph.op_namespace import ops


def _concrete(*values):
    """Whether an operator on ``values`` computes now: some is a Var with a value, none is a
    Var without one, and no trace is being built (where a value is still a graph node)."""
    found = False
    for value in values:
        if isinstance(value, Var):
            if value._value is None:
                return False
            found = True
    return found and not tracing.in_trace()


def _operator(name, compute, reflected=False):
    def method(self, other):
        if _concrete(self, other):
            a, b = self._value, other._value if isinstance(other, Var) else other
            return compute(b, a) if reflected else compute(a, b)
        return getattr(ops, name)(other, self) if reflected else getattr(ops, name)(self, other)
    return method


def is_symbolic(value):
    """Whether ``value`` is a graph value here: a Var, unless it holds a value and no trace is
    being built (a loss read after an eager tape is data)."""
    return isinstance(value, Var) and (value._value is None or tracing.in_trace())


def concrete(value):
    """``value``, or its array if it is a Var that is data here (``is_symbolic``)."""
    return value._value if isinstance(value, Var) and not is_symbolic(value) else value


def _value_of(var):
    if var._value is None:
        evaluate([var])
    return var._value


def evaluate(values):
    """Give Vars their values by running their graph: ``hiapi.graph.eager_tape.evaluate``,
    set here by that module (it compiles Functions, which build on this one)."""
    raise TypeError(f"{values[0]!r} is symbolic: it has no value outside a running graph")


class Var:
    __slots__ = ("op", "inputs", "shape", "dtype", "name", "recompute", "_keras_history",
                 "_keras_logits", "_keras_mask", "_value", "__weakref__")

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
        self._value = None           # its array, once computed eagerly (hiapi.graph.eager_tape)
        for watcher in _watchers:     # a GradientTape's stop_recording block
            watcher.append(self)

    @property
    def ndim(self):
        return len(self.shape)

    def __repr__(self):
        shape = "(" + ", ".join("None" if d is None else str(d) for d in self.shape) + \
            ("," if len(self.shape) == 1 else "") + ")"
        label = f" name={self.name!r}" if self.name else ""
        if self._value is not None:       # a value, as TensorFlow's eager tensors print
            return f"<Var shape={shape} dtype={self.dtype.name}{label} numpy={self._value!r}>"
        return f"<Var {self.op.name} shape={shape} dtype={self.dtype.name}{label}>"

    # the value, for a Var computed eagerly (under an eager GradientTape): computed on demand
    def numpy(self):
        return np.array(_value_of(self), copy=True)

    def __array__(self, dtype=None, copy=None):
        value = _value_of(self)
        return value if dtype is None else value.astype(dtype)

    def __float__(self): return float(_value_of(self))
    def __int__(self): return int(_value_of(self))
    def item(self): return _value_of(self).item()
    def tolist(self): return _value_of(self).tolist()

    def __str__(self):
        # ``print(loss)`` in an eager tape's block shows the value, as TensorFlow's does
        if self._value is None and tracing.eager_tape_recording():
            try:
                _value_of(self)
            except TypeError:          # depends on a placeholder without data
                pass
        return repr(self)

    def __format__(self, spec):
        if not spec:
            return str(self)
        return format(_value_of(self).item() if self.ndim == 0 else _value_of(self), spec)

    def __bool__(self):
        # a value, or in an eager tape's block one it can compute: Python's ``if`` on a
        # tensor there takes the branch the data says, as in TensorFlow's eager loops (the
        # block's graph then holds that branch)
        if self._value is not None or tracing.eager_tape_recording():
            return bool(_value_of(self))
        raise TypeError("A symbolic Var has no truth value: it holds no data until the graph "
                        "is run. Use hiapi.graph.ops.where() for data-dependent choices.")

    # numpy defers to the reflected operator: ``np_array + var`` builds an add op instead of an
    # object array of Vars (found by the layer fuzzer in Normalization(invert=True))
    __array_ufunc__ = None

    # numpy-style operators; imported lazily to keep var.py free of op definitions. On Vars
    # with values, outside a trace, they compute now (``loss_value * 2`` after a tape)
    __add__ = _operator("add", lambda a, b: a + b)
    __radd__ = _operator("add", lambda a, b: a + b, reflected=True)
    __sub__ = _operator("subtract", lambda a, b: a - b)
    __rsub__ = _operator("subtract", lambda a, b: a - b, reflected=True)
    __mul__ = _operator("multiply", lambda a, b: a * b)
    __rmul__ = _operator("multiply", lambda a, b: a * b, reflected=True)
    __truediv__ = _operator("divide", lambda a, b: a / b)
    __rtruediv__ = _operator("divide", lambda a, b: a / b, reflected=True)
    __pow__ = _operator("power", lambda a, b: a ** b)
    __rpow__ = _operator("power", lambda a, b: a ** b, reflected=True)
    __matmul__ = _operator("matmul", lambda a, b: a @ b)
    __rmatmul__ = _operator("matmul", lambda a, b: a @ b, reflected=True)
    __gt__ = _operator("greater", lambda a, b: a > b)
    __ge__ = _operator("greater_equal", lambda a, b: a >= b)
    __lt__ = _operator("less", lambda a, b: a < b)
    __le__ = _operator("less_equal", lambda a, b: a <= b)

    def __neg__(self):
        return -self._value if _concrete(self) else ops.negative(self)

    def __getitem__(self, key):
        return self._value[key] if _concrete(self) else ops.getitem(self, key)
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
