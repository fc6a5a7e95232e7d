"""Running a function written in graph ops on numpy arrays, as Keras runs its loss and metric
functions eagerly: ``hiapi.losses.mean_squared_error(y_true, y_pred)`` on arrays returns an array,
the same function on symbolic tensors (inside a custom loss) builds graph ops.

The function is traced once per input signature (shapes and dtypes) into a compiled
``Function`` and cached, so calling it on batch after batch does not rebuild the graph.
"""
from collections import OrderedDict

import numpy as np

from hiapi.graph import Function, placeholder
from hiapi.graph.var import is_symbolic as symbolic_var

_CACHE_SIZE = 128


def is_symbolic(*values):
    return any(symbolic_var(v) for v in values)


def as_array(value):
    """An array the graph can take: bools become float32, Python numbers numpy's defaults."""
    array = np.asarray(value.numpy() if hasattr(value, "numpy") else value)
    if array.dtype == bool:
        array = array.astype(np.float32)
    if array.dtype.kind not in "iuf":
        raise TypeError(f"expected numeric arrays, got dtype {array.dtype}")
    return array


class EagerCache:
    """Compiled Functions of ``fn`` keyed by a caller's key plus the inputs' signature."""

    def __init__(self):
        self._functions = OrderedDict()

    def run(self, fn, arrays, key=()):
        """``fn(*placeholders)`` (a Var or a list of Vars) evaluated on ``arrays``; None
        entries stay None (an absent sample weight)."""
        arrays = [None if a is None else as_array(a) for a in arrays]
        signature = (key,) + tuple(None if a is None else (a.shape, a.dtype.str) for a in arrays)
        function = self._functions.get(signature)
        if function is None:
            holders = [None if a is None else placeholder(a.shape, a.dtype) for a in arrays]
            function = Function([h for h in holders if h is not None], fn(*holders),
                                name=f"{getattr(fn, '__name__', 'function')}_eager")
            self._functions[signature] = function
            if len(self._functions) > _CACHE_SIZE:
                self._functions.popitem(last=False)
        else:
            self._functions.move_to_end(signature)
        return function(*[a for a in arrays if a is not None])


_SHARED = EagerCache()


def run_eagerly(fn, arrays, key=None):
    """Evaluate graph-op function ``fn`` on numpy ``arrays`` through the shared cache; ``key``
    (hashable) names what ``fn`` computes when ``fn`` itself is a fresh closure."""
    return _SHARED.run(fn, arrays, fn if key is None else key)
