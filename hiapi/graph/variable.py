"""``Variable``: mutable state the graph reads and updates (weights, optimizer slots, counters).

The array lives on the backend; the graph sees it through one ``Read`` Var (``variable.read``),
the same node everywhere, so gradients can be asked for with respect to it and CSE sees one
value. A compiled Function writes a Variable only through its ``updates``, after every reader has
run, so a step always reads the values from before the step.

Mixed precision (``hiapi.dtype_policy``): inside ``autocast(dtype)``, which a layer opens around
its ``call``, ``variable.read`` of a float Variable made with ``autocast=True`` is the read cast
to ``dtype``, so a float32 master weight enters a float16 layer's arithmetic as float16 and its
gradient flows back through the cast as float32. Outside the scope ``read`` is the raw value.
"""
from contextlib import contextmanager

import numpy as np

from hiapi.backends import get_backend
from hiapi.graph import tracing
from hiapi.runtime import state_writes
from hiapi.runtime.settings import floatx
from hiapi.runtime.dtypes import is_float
from hiapi.graph.ops.elementwise import cast
from hiapi.graph.ops.sources import Read
from hiapi.graph.var import Var

_autocast_dtypes: list = []     # innermost last; None: no cast


@contextmanager
def autocast(dtype):
    """Reads of autocast float Variables inside the block are cast to ``dtype`` (None: not)."""
    _autocast_dtypes.append(None if dtype is None else np.dtype(dtype))
    try:
        yield
    finally:
        _autocast_dtypes.pop()


named_initializers = None     # hiapi.initializers.get, set by that module (a higher floor)


def _initial_value(initializer, shape, dtype, name):
    """The array a Variable starts from (see ``Variable``)."""
    if isinstance(initializer, str) or callable(initializer) and \
            not isinstance(initializer, (np.ndarray, np.generic)):
        if shape is None:
            raise ValueError(f"Variable {name or 'variable'!r}: an initializer "
                             f"({initializer!r}) needs shape=")
        if isinstance(initializer, str):
            initializer = named_initializers(initializer)
        dtype = np.dtype(dtype or floatx())
        return np.asarray(initializer(tuple(shape), dtype), dtype=dtype)
    if initializer is None:
        raise ValueError(f"Variable {name or 'variable'!r}: give an initial value or an "
                         f"initializer and a shape")
    if dtype is None and isinstance(initializer, (float, int, list, tuple)) and \
            not isinstance(initializer, bool):
        # a Python number or list takes Keras's dtypes: floatx (float32) and int32, not
        # numpy's 64-bit ones (``keras.Variable(0.0)`` is float32)
        kind = np.asarray(initializer).dtype.kind
        dtype = {"f": floatx(), "i": np.int32}.get(kind)
    return np.asarray(initializer, dtype=dtype)


class Variable:
    def __init__(self, initializer=None, shape=None, dtype=None, trainable=True, autocast=True,
                 aggregation="none", synchronization="auto", name=None):
        """Keras 3's ``keras.Variable``: ``initializer`` is the value (an array or a number)
        or, with ``shape``, an initializer (a callable ``(shape, dtype)`` or a name such as
        ``"zeros"``). ``aggregation`` and ``synchronization`` are accepted (hiapi's
        distributed plans choose how each variable is reduced)."""
        backend = get_backend()
        array = _initial_value(initializer, shape, dtype, name)
        if shape is not None and tuple(array.shape) != tuple(shape):
            raise ValueError(f"Variable {name or 'variable'!r}: the initial value has shape "
                             f"{tuple(array.shape)}, shape={tuple(shape)} was given")
        self.storage = backend.asarray(np.array(array, copy=True))
        self.name = name or "variable"
        self.trainable = trainable
        self.autocast = autocast
        self.constraint = None   # applied to the new value after each optimizer update
        self._read = Read(self)()
        self._casts = {}

    @property
    def read(self):
        """The Variable's value in the graph (cast inside an ``autocast`` scope)."""
        dtype = _autocast_dtypes[-1] if _autocast_dtypes else None
        if dtype is None or not self.autocast or dtype == self._read.dtype or \
                not is_float(self._read.dtype):
            return self._read
        if dtype not in self._casts:
            self._casts[dtype] = cast(self._read, dtype)
        return self._casts[dtype]

    @property
    def storage(self):
        """The array on the backend's device."""
        return self._storage

    @storage.setter
    def storage(self, array):
        # a host array set from outside (set_weights, a user) goes to the device the steps
        # run on; on the CPU backends this is the array itself, not a copy
        self._storage = get_backend().asarray(array)
        state_writes.note()

    @property
    def path(self):
        """Keras 3's ``variable.path``, the layer-qualified name (``"dense/kernel"``), which is
        hiapi's ``name`` too (Keras's ``name`` is its last part, ``"kernel"``)."""
        return self.name

    @property
    def shape(self):
        return tuple(self.storage.shape)

    @property
    def dtype(self):
        return np.dtype(self.storage.dtype)

    @property
    def value(self):
        """Keras's ``variable.value``: inside a layer's ``call`` (or a traced step) the graph
        value at that point of the step; elsewhere the backend array (``storage``), itself:
        an in-place edit of it is seen by the next ``predict`` or ``evaluate``."""
        if tracing.in_trace():
            return tracing.current_value(self)
        state_writes.hand_out()
        return self.storage

    @value.setter
    def value(self, array):
        self.storage = array        # on the CPU backends the caller's array itself
        state_writes.hand_out()

    def numpy(self):
        return get_backend().to_numpy(self.storage).copy()

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """numpy's operators on a Variable are the Variable's own: ``ndarray * variable`` in a
        ``call`` is a graph value that trains, not a constant read through ``__array__``.
        numpy's other functions read its value now, as Keras's variables convert
        (``np.sum(layer.kernel)``, ``np.abs(variable)``)."""
        operator = _NUMPY_OPERATORS.get(ufunc)
        if method == "__call__" and operator and len(inputs) == 2 and not kwargs:
            first, second = inputs
            return getattr(self, f"__{operator}__")(second) if first is self else \
                getattr(self, f"__r{operator}__")(first)
        values = [x.numpy() if isinstance(x, Variable) else x for x in inputs]
        return getattr(ufunc, method)(*values, **kwargs)

    def __array__(self, dtype=None, copy=None):
        """``np.asarray(variable)``: a copy of its value now, as Keras's variables convert
        (a layer whose ``call`` returns ``self.total`` gives the Variable back eagerly)."""
        array = self.numpy()
        return array if dtype is None else array.astype(dtype, copy=False)

    def assign(self, value):
        """Set the variable to ``value`` (same shape; cast to the variable's dtype); returns
        the new value. Inside a layer's ``call`` or a traced step it becomes an update of
        that step, applied after the step has run (Keras's state updates in ``call``: a
        running total, a counter); elsewhere it writes the variable now."""
        if isinstance(value, Var) or tracing.in_trace():
            return self._assign_symbolic(value)
        array = np.asarray(value.numpy() if isinstance(value, Variable) else value)
        if array.shape != self.shape:
            raise ValueError(f"Variable {self.name!r}: cannot assign a value of shape "
                             f"{array.shape}, the variable has shape {self.shape}")
        state_writes.note()
        get_backend().copy_into(self.storage, array.astype(self.dtype, copy=False))
        return get_backend().to_numpy(self.storage)     # a host array, whatever the device

    def assign_add(self, value):
        return self.assign(self._current() + _operand(value))

    def assign_sub(self, value):
        return self.assign(self._current() - _operand(value))

    def _current(self):
        return tracing.current_value(self) if tracing.in_trace() else self.numpy()

    def _assign_symbolic(self, value):
        if not tracing.in_trace():
            raise ValueError(
                f"Variable {self.name!r}: cannot assign the symbolic tensor {value!r} outside "
                f"a layer's call or a traced step (it has no value until a step runs)")
        if self.trainable and tracing.in_layer_call():
            raise ValueError(
                f"Variable {self.name!r} is trainable, so the optimizer sets its value at each "
                f"step; a layer's call may assign only non-trainable weights "
                f"(add_weight(..., trainable=False)), as Keras's running statistics are")
        value = cast(_operand(value), self.dtype)
        if value.shape != self.shape:
            raise ValueError(
                f"Variable {self.name!r}: cannot assign a value of shape {_fmt(value.shape)}, "
                f"the variable has shape {_fmt(self.shape)}"
                + ("; a batch-sized value must be reduced over the batch first (e.g. "
                   "ops.sum(x, axis=0))" if None in value.shape else ""))
        tracing.add_update(self, value)
        return value

    def __repr__(self):
        return f"<Variable {self.name!r} shape={self.shape} dtype={self.dtype.name}>"


def _operand(value):
    """A Variable in an assignment's value means its value: in a trace its graph value."""
    if not isinstance(value, Variable):
        return value
    return tracing.current_value(value) if tracing.in_trace() else value.numpy()


def _fmt(shape):
    return "(" + ", ".join("None" if d is None else str(d) for d in shape) + \
        ("," if len(shape) == 1 else "") + ")"


# the ufuncs behind the operators Variable has (``_through_read``), by the operator's name
_NUMPY_OPERATORS = {np.add: "add", np.subtract: "sub", np.multiply: "mul",
                    np.true_divide: "truediv", np.power: "pow", np.matmul: "matmul"}


def _through_read(name):
    """Arithmetic on a Variable is arithmetic on its graph value (``variable.read``, or the
    value assigned earlier in the step being traced), so a layer's ``call`` may write
    ``inputs * self.scale`` as in Keras. Outside a trace, with no symbolic operand, it is
    arithmetic on its value now, as a Keras variable's is eagerly: a script's
    ``optimizer.learning_rate.assign(optimizer.learning_rate * 0.2)`` computes a number."""
    def operator(self, *args):
        if tracing.in_trace() or any(isinstance(arg, Var) for arg in args):
            return getattr(tracing.current_value(self), name)(*args)
        values = [arg.numpy() if isinstance(arg, Variable) else arg for arg in args]
        return getattr(self.numpy(), name)(*values)
    return operator


def _value_now(convert):
    """``float(variable)``, ``int(variable)``: a scalar variable's value now, as Keras's."""
    def scalar(self):
        array = self.numpy()
        if array.size != 1:
            raise TypeError(f"Variable {self.name!r}: only a variable of one element converts "
                            f"to a Python {convert.__name__}, this one has shape {self.shape}")
        return convert(array.reshape(()))
    return scalar


def _compare_now(name):
    """``variable < x`` and the other orderings: on its value now (a trace compares through
    ``keras.ops``); ``==`` stays identity, as variables are kept in sets and dicts."""
    return lambda self, other: getattr(self.numpy(), name)(_operand(other))


for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
              "__truediv__", "__rtruediv__", "__pow__", "__rpow__", "__matmul__",
              "__rmatmul__", "__neg__", "__getitem__"):
    setattr(Variable, _name, _through_read(_name))
Variable.__float__ = _value_now(float)
Variable.__int__ = _value_now(int)
for _name in ("__lt__", "__le__", "__gt__", "__ge__"):
    setattr(Variable, _name, _compare_now(_name))
