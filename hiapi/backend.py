"""Keras's ``keras.backend`` helpers: the global settings, sessions, and questions about tensors.

Not to be confused with ``hiapi.backends`` (plural), which holds the array backends that run
compiled graphs (numpy, numba, cupy). This module is what Keras scripts call::

    import hiapi
    hiapi.backend.floatx()                    # 'float32'
    hiapi.backend.int_shape(hiapi.Input((3,)))  # (None, 3)
"""
import numpy as np

from hiapi.graph.var import Var
from hiapi.ops.core import standardize_dtype  # noqa: F401  (keras.backend has it too)
from hiapi.config import backend  # noqa: F401
from hiapi.runtime.settings import (  # noqa: F401
    epsilon, floatx, image_data_format, set_epsilon, set_floatx, set_image_data_format)


def clear_session(free_memory=True):
    """Reset default layer names (the next Dense is ``dense`` again), as Keras does. hiapi
    keeps no global graph, so there is nothing else to free; ``free_memory`` is accepted for
    Keras scripts."""
    from hiapi.utils.naming import clear_session as reset_names
    reset_names()


def is_keras_tensor(x):
    """True for a symbolic tensor produced by ``hiapi.Input`` or a layer call (or by ops on
    those), i.e. something a functional model can be built from."""
    return isinstance(x, Var)


def int_shape(x):
    """The shape as a tuple of ints, None for unknown axes (the batch axis of a symbolic
    tensor)."""
    if isinstance(x, Var):
        return tuple(x.shape)
    if hasattr(x, "shape"):
        return tuple(int(d) for d in x.shape)
    raise TypeError(f"int_shape: expected a tensor or an array, got {type(x).__name__}")


def is_float_dtype(dtype):
    return np.dtype(standardize_dtype(dtype)).kind == "f"


def is_int_dtype(dtype):
    return np.dtype(standardize_dtype(dtype)).kind in "iu"


def result_type(*dtypes):
    """The dtype numpy's promotion gives these dtypes (None and Python floats are floatx)."""
    if not dtypes:
        return floatx()
    return np.result_type(*(standardize_dtype(d) for d in dtypes)).name
