"""What every ``hiapi.ops`` function shares: telling symbolic tensors from data, and turning data
into arrays with Keras's dtype rules.

Each public op looks at its arguments: if any is a symbolic tensor (a graph ``Var``, as inside a
layer's ``call`` or between layers of a functional model) it builds graph ops
(``hiapi.graph.ops``); otherwise it computes at once with numpy and returns a numpy array, as
``keras.ops`` does eagerly on the numpy backend::

    hiapi.ops.relu(np.array([-1.0, 2.0]))     # array([0., 2.])
"""
import numpy as np

from hiapi.runtime.settings import floatx
from hiapi.runtime.dtypes import as_dtype
from hiapi.graph import ops as O
from hiapi.graph import tracing
from hiapi.graph.op import as_var
from hiapi.graph.var import Var, concrete, is_symbolic as symbolic_var
from hiapi.graph.variable import Variable


def layer_call():
    """Inside a layer's ``call`` a Variable (``self.kernel``) stands for its graph value, so
    ``ops.sum(ops.square(self.kernel))`` builds ops instead of freezing today's numbers."""
    return tracing.symbolic_scope()


def is_symbolic(*args):
    """True when any argument (lists and tuples searched) is a symbolic tensor, or a
    Variable inside a layer's ``call``; and always in an eager tape's block, which records
    every op (``hiapi.graph.eager_tape``)."""
    if tracing.eager_tape_recording():
        return True
    for a in args:
        if symbolic_var(a) or (tracing.in_layer_call() and isinstance(a, Variable)):
            return True
        if isinstance(a, (list, tuple)) and is_symbolic(*a):
            return True
    return False


def is_tensor(x):
    """True for a symbolic tensor or an array (what ``keras.ops.is_tensor`` accepts)."""
    return isinstance(x, (Var, np.ndarray))


def convert_to_tensor(x, dtype=None, sparse=None):
    """``x`` as an array (or the symbolic tensor itself, cast to ``dtype`` if given).

    Python floats and lists of them become ``floatx()`` (float32), Python ints int32, as in
    Keras; numpy arrays keep their dtype unless ``dtype`` is given."""
    if sparse:
        raise ValueError("convert_to_tensor: sparse tensors are not supported by hiapi "
                         f"(got sparse={sparse!r})")
    x = concrete(x)            # a Var computed eagerly is its array outside a trace
    if isinstance(x, Var):
        return x if dtype is None else O.cast(x, dtype)
    if tracing.in_layer_call() and isinstance(x, Variable):
        return convert_to_tensor(tracing.current_value(x), dtype)
    if hasattr(x, "numpy") and not isinstance(x, np.ndarray):
        x = x.numpy()          # a hiapi Variable
    if dtype is not None:
        return np.asarray(x, dtype=standardize_dtype(dtype))
    if isinstance(x, (np.ndarray, np.generic)):
        return np.asarray(x)
    array = np.asarray(x)
    if array.dtype == np.float64:
        return array.astype(floatx())
    if array.dtype == np.int64:
        return array.astype(np.int32)
    return array


def graph_operand(x):
    """An operand of a symbolic op: a Var, a Variable's graph value, an array, or a list of
    them stacked (``ops.sum(model.losses)``, as Keras's ``compute_loss`` writes)."""
    if isinstance(x, Variable):
        return tracing.current_value(x)
    if isinstance(x, (list, tuple)) and x and is_symbolic(*x):
        return O.stack([graph_operand(item) for item in x])
    return convert_to_tensor(x)


def convert_to_numpy(x):
    """A numpy array holding ``x``'s values; a symbolic tensor has none yet, which is an error."""
    if isinstance(x, Var):
        raise ValueError(f"convert_to_numpy: {x!r} is symbolic (it holds no values until the "
                         f"model runs); call the model or layer on arrays to get values")
    return np.asarray(convert_to_tensor(x))


def standardize_dtype(dtype):
    """A dtype name from a name, numpy dtype or Python type (None gives floatx)."""
    if dtype is None:
        return floatx()
    if dtype is float:
        return floatx()
    if dtype is int:
        return "int64"
    try:
        return as_dtype(dtype).name
    except TypeError:
        raise ValueError(f"Invalid dtype {dtype!r}: expected a name such as 'float32' or "
                         f"'int32', or a numpy dtype") from None


def shape(x):
    """The shape as a tuple; None marks the unknown batch axis of a symbolic tensor."""
    return tuple(x.shape) if isinstance(x, Var) else np.shape(x)


def ndim(x):
    return len(shape(x))


def dtype(x):
    return x.dtype.name if isinstance(x, Var) else convert_to_tensor(x).dtype.name


def cast(x, dtype):
    dtype = standardize_dtype(dtype)
    if isinstance(x, Var):
        return O.cast(x, dtype)
    return convert_to_tensor(x).astype(dtype)


def stop_gradient(variable):
    """The same value, with no gradient flowing back through it. On data it is the identity."""
    if isinstance(variable, Var) or isinstance(getattr(variable, "read", None), Var):
        return O.stop_gradient(as_var(variable))        # a Var, or a Variable's value
    return convert_to_tensor(variable)


def eager(x):
    """An argument of an eager op: arrays stay as they are, Python numbers keep numpy's weak
    typing (so ``add(float32 array, 2.0)`` stays float32), lists become arrays."""
    if isinstance(x, (bool, int, float, np.ndarray, np.generic)):
        return x
    return convert_to_tensor(x)


def eager_array(x):
    """An argument that must be an array (unary ops): Python numbers become floatx/int32."""
    return convert_to_tensor(x)
