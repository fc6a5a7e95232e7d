"""``Variable``: mutable state the graph reads and updates (weights, optimizer slots, counters).

The array lives on the backend; the graph sees it through one ``Read`` Var (``variable.read``),
the same node everywhere, so gradients can be asked for with respect to it and CSE sees one
value. A compiled Function writes a Variable only through its ``updates``, after every reader has
run, so a step always reads the values from before the step.
"""
import numpy as np

from hiapi.backends import get_backend
from hiapi.graph.ops.sources import Read


class Variable:
    def __init__(self, value, name=None, trainable=True, dtype=None):
        backend = get_backend()
        array = np.asarray(value, dtype=dtype)
        self.value = backend.asarray(np.array(array, copy=True))
        self.name = name or "variable"
        self.trainable = trainable
        self.constraint = None   # applied to the new value after each optimizer update
        self.read = Read(self)()

    @property
    def value(self):
        """The array on the backend's device."""
        return self._value

    @value.setter
    def value(self, array):
        # a host array set from outside (set_weights, a user) goes to the device the steps
        # run on; on the CPU backends this is the array itself, not a copy
        self._value = get_backend().asarray(array)

    @property
    def shape(self):
        return tuple(self.value.shape)

    @property
    def dtype(self):
        return np.dtype(self.value.dtype)

    def numpy(self):
        return get_backend().to_numpy(self.value).copy()

    def assign(self, value):
        """Copy ``value`` into the variable's buffer (shape must match; dtype is cast)."""
        array = np.asarray(value)
        if array.shape != self.shape:
            raise ValueError(f"Variable {self.name!r}: cannot assign a value of shape "
                             f"{array.shape}, the variable has shape {self.shape}")
        get_backend().copy_into(self.value, array.astype(self.dtype, copy=False))

    def __repr__(self):
        return f"<Variable {self.name!r} shape={self.shape} dtype={self.dtype.name}>"


def _through_read(name):
    """Arithmetic on a Variable is arithmetic on its graph value (``variable.read``), so a
    layer's ``call`` may write ``inputs * self.scale`` as in Keras."""
    return lambda self, *args: getattr(self.read, name)(*args)


for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
              "__truediv__", "__rtruediv__", "__pow__", "__rpow__", "__matmul__",
              "__rmatmul__", "__neg__", "__getitem__"):
    setattr(Variable, _name, _through_read(_name))
