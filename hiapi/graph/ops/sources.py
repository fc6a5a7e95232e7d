"""Ops with no inputs: where values enter the graph (placeholders, constants, variable reads)."""
import numpy as np

from hiapi.runtime.dtypes import as_dtype
from hiapi.graph.op import Op


class Placeholder(Op):
    """A value fed at each call of a Function; ``None`` dimensions are bound at compile time."""
    name = "placeholder"
    is_source = True

    def __init__(self, shape, dtype):
        self.shape = tuple(None if d is None else int(d) for d in shape)
        self.dtype = as_dtype(dtype)

    def key(self):
        return (id(self),)   # two placeholders are never the same value

    def infer(self):
        return self.shape, self.dtype

    def grad(self, inputs, output, gout):
        return []


class Constant(Op):
    name = "constant"
    is_source = True

    def __init__(self, value):
        self.value = value

    def attrs(self):
        return {"value": self.value}

    def key(self):
        return (Constant, self.value.dtype.str, self.value.shape, self.value.tobytes())

    def infer(self):
        return self.value.shape, self.value.dtype

    def grad(self, inputs, output, gout):
        return []

    def __repr__(self):
        return f"Constant({self.value!r})" if self.value.size <= 4 else \
            f"Constant(shape={self.value.shape}, dtype={self.value.dtype})"


class Read(Op):
    """The current value of a ``Variable``."""
    name = "read"
    is_source = True

    def __init__(self, variable):
        self.variable = variable

    def key(self):
        return (Read, id(self.variable))

    def infer(self):
        return self.variable.shape, self.variable.dtype

    def grad(self, inputs, output, gout):
        return []

    def __repr__(self):
        return f"Read({self.variable.name!r})"


def placeholder(shape, dtype="float32", name=None):
    """A graph input: ``placeholder((None, 784))`` takes any batch size."""
    return Placeholder(shape, dtype)(name=name)


def constant(value, dtype=None):
    """A constant Var holding a copy of ``value`` (Python floats default to float32)."""
    if dtype is None and isinstance(value, float):
        dtype = np.float32
    array = np.array(value, dtype=dtype)
    array.setflags(write=False)
    return Constant(array)()
