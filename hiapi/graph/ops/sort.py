"""``argsort``: the indices that sort ``x`` along an axis (numpy's ``argsort``).

hiapi's one sorting primitive. ``hiapi.random.shuffle`` draws a random permutation as the
argsort of counter-based random keys, so a shuffle repeats for a seed on every backend.
"""
import numpy as np

from hiapi.graph.op import Op, as_var


class ArgSort(Op):
    """int64 indices, shaped like ``x``, that sort it along ``axis`` (ascending)."""
    name = "argsort"

    def __init__(self, axis):
        self.axis = int(axis)

    def infer(self, x):
        if not -x.ndim <= self.axis < x.ndim or x.ndim == 0:
            raise ValueError(f"argsort: axis {self.axis} is out of range for a tensor of shape "
                             f"{x.shape}")
        if x.dtype.kind not in "iuf":
            raise TypeError(f"argsort: expected a numeric tensor, got dtype {x.dtype.name}")
        return x.shape, np.dtype(np.int64)

    def grad(self, inputs, y, g):
        return [None]           # integer indices: piecewise constant in x


def argsort(x, axis=-1):
    return ArgSort(axis)(as_var(x))
