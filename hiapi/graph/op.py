"""``Op``: one primitive operation, defined in one place.

An Op subclass holds everything the compiler knows about an operation: its hashable attributes
(so CSE can compare two applications), ``infer`` (output shape and dtype from input shapes and
dtypes, raising named errors), ``grad`` (input gradients written with other ops, so gradients are
graph too and a second ``grad`` works) and the flags the memory planner reads. No array code lives
here: kernels are registered in the backends under ``Op.name``.

Calling an Op instance on inputs builds a Var::

    y = Exp()(x)
"""
from typing import NamedTuple

import numpy as np

from hiapi.graph import tracing
from hiapi.graph.op_namespace import ops
from hiapi.runtime.dtypes import BFLOAT16, is_float
from hiapi.graph.var import Var


class Spec(NamedTuple):
    """Shape and dtype of a value; what ``infer`` reads when no Var exists (compile time)."""
    shape: tuple
    dtype: np.dtype

    @property
    def ndim(self):
        return len(self.shape)


class Op:
    name = "op"                 # kernel key in every backend
    elementwise = False         # output[i] depends on inputs[i] only: fusible
    view_of: int | None = None  # index of the input whose memory the output aliases
    inplace = False             # kernels must be right when the output buffer is an input's
    inplace_inputs: tuple | None = None   # which inputs it may overwrite (None: any of them)
    is_source = False           # no inputs: placeholder, constant, variable read

    def __call__(self, *inputs, name=None):
        inputs = [as_var(v) for v in inputs]
        shape, dtype = self.infer(*inputs)
        return Var(self, inputs, shape, dtype, name=name)

    def may_overwrite(self, k):
        """True when the output may be written into input ``k``'s storage."""
        return self.inplace and (self.inplace_inputs is None or k in self.inplace_inputs)

    def attrs(self) -> dict:
        """Keyword arguments for the kernel; also the identity of the op for CSE."""
        return {k: v for k, v in vars(self).items() if not k.startswith("_")}

    def infer(self, *inputs):
        raise NotImplementedError(f"{type(self).__name__}.infer")

    def value_from_shapes(self, *inputs):
        """The output's value when the inputs' Specs alone decide it (concrete shapes), else
        None. The executor then computes it once when it compiles, not at every run: a
        ``size`` op was a kernel call per step (3 us of a 150 us step at batch 32)."""
        return None

    def grad(self, inputs, output, gout):
        """Gradients with respect to each input as Vars (None where there is none)."""
        raise NotImplementedError(f"op {self.name!r} has no gradient rule")

    def key(self):
        return (type(self), tuple(sorted(self.attrs().items())))

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.attrs().items())
        return f"{type(self).__name__}({args})"


def as_var(value, dtype=None):
    """A Var for ``value``: Vars pass through, arrays and Python numbers become constants."""
    if isinstance(value, Var):
        return value
    if isinstance(getattr(value, "read", None), Var):
        # a Variable: its value in the graph (after an assignment earlier in the step being
        # traced, the assigned value), not a frozen copy
        return tracing.current_value(value)
    if isinstance(value, np.ndarray) and value.ndim:
        fed = tracing.array_input(value)        # an eager tape's block: fed, not a constant
        if fed is not None:
            return fed if dtype is None or fed.dtype == np.dtype(dtype) else \
                ops.cast(fed, dtype)
    return ops.constant(value, dtype)


def broadcast_shapes(op_name, *shapes):
    """numpy broadcasting over shapes that may hold None (the batch size, one symbol)."""
    ndim = max(len(s) for s in shapes)
    padded = [(1,) * (ndim - len(s)) + tuple(s) for s in shapes]
    out = []
    for dims in zip(*padded):
        known = {d for d in dims if d is not None and d != 1}
        if len(known) > 1:
            raise ValueError(f"{op_name}: shapes {', '.join(map(str, shapes))} do not broadcast "
                             f"(dimension sizes {sorted(known)} clash; each must be equal or 1)")
        if known:
            out.append(known.pop())
        elif None in dims:
            out.append(None)
        else:
            out.append(1)
    return tuple(out)


def as_vars(*values):
    """Vars for an op's operands; a Python number takes the dtype numpy would give it beside
    the Var operands (so ``x * 2.0`` stays float32 when x is float32)."""
    dtypes = [v.dtype for v in values if isinstance(v, Var)]
    out = []
    for v in values:
        if isinstance(v, Var):
            out.append(v)
        elif isinstance(v, (bool, int, float)) and dtypes:
            out.append(as_var(v, _weak_scalar_dtype(dtypes, v)))
        else:
            out.append(as_var(v))
    return out


def _weak_scalar_dtype(dtypes, value):
    """numpy's dtype for a Python number beside ``dtypes``; a float beside bfloat16 stays
    bfloat16, as it stays float16 beside float16 (ml_dtypes' promotion would give float64)."""
    dtype = np.result_type(*dtypes, value)
    if isinstance(value, float) and any(d == BFLOAT16 for d in dtypes):
        widest = np.result_type(*dtypes)
        dtype = widest if is_float(widest) else dtype
    return dtype


def result_dtype(*vars_):
    return np.result_type(*(v.dtype for v in vars_))


def normalize_axes(op_name, axis, ndim):
    """A sorted tuple of non-negative axes; None means all axes."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out = []
    for a in axes:
        if not -ndim <= a < ndim:
            raise ValueError(f"{op_name}: axis {a} is out of range for an input of rank {ndim}")
        out.append(int(a) % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{op_name}: repeated axis in {axis}")
    return tuple(sorted(out))


def require_float(op_name, var):
    if not is_float(var.dtype):
        raise TypeError(f"{op_name}: expected a floating-point input, got dtype {var.dtype.name}")
