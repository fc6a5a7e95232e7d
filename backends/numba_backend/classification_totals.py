"""The classification totals (``hiapi/graph/passes/classification_totals.py``) as one numba loop
each over the rows: the batch's summed cross-entropy, and how many rows' argmax is the label.

Why: the ops they replace are six kernel calls whose dispatch costs 1.5-4 us apiece on a batch of
32 rows, where the arithmetic is well under one (docs/performance.md). Each row's cross-entropy
is the per-row kernel's (``cross_entropy.row_loss``: same steps, same dtype), added in float64;
a bad label falls back to the op-by-op kernels, which raise the per-row kernel's message.
Arrays these loops do not take (a 16-bit float, a strided or empty batch) run op by op too.
"""
import numpy as np
from numba import njit

from hiapi.backends.numba_backend.cross_entropy import row_loss
from hiapi.backends.numba_backend.registry import backend
from hiapi.backends.numpy_backend import backend as numpy_backend

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


@njit(cache=True)
def _cross_entropy_total(logits, labels):
    """``sum_r logsumexp(logits[r]) - logits[r, labels[r]]`` in float64, and the row of the
    first label outside the classes (or -1)."""
    rows, depth = logits.shape
    total = 0.0
    for r in range(rows):
        label = labels[r]
        if label < 0 or label >= depth:
            return total, r
        total += row_loss(logits, r, label)
    return total, -1


@njit(cache=True)
def _hits(scores, labels):
    """Rows whose first largest score (a NaN is largest, as in ``np.argmax``) is at the label."""
    rows, depth = scores.shape
    hits = 0
    for r in range(rows):
        best, top = 0, scores[r, 0]
        if top == top:
            for c in range(1, depth):
                value = scores[r, c]
                if value != value:
                    best = c
                    break
                if value > top:
                    best, top = c, value
        if best == labels[r]:
            hits += 1
    return hits


def _rows(scores, labels):
    """``scores`` as (rows, classes) and ``labels`` flat, when the loops take them, else None.
    A classifier's (rows, classes) and (rows,) are taken as they are: a reshape makes a new
    array object at every call."""
    if scores.dtype not in _FLOATS or labels.dtype.kind not in "iu" or scores.ndim == 0 or \
            scores.shape[-1] == 0 or labels.size * scores.shape[-1] != scores.size or \
            not scores.flags.c_contiguous or not labels.flags.c_contiguous:
        return None
    if scores.ndim == 2 and labels.ndim == 1:
        return scores, labels
    return scores.reshape(-1, scores.shape[-1]), labels.reshape(-1)


@backend.register("sparse_cross_entropy_total")
def sparse_cross_entropy_total(out, logits, labels):
    flat = _rows(logits, labels)
    if flat is not None:
        total, bad = _cross_entropy_total(*flat)
        if bad < 0:
            out[...] = total
            return
    numpy_backend.kernels["sparse_cross_entropy_total"](out, logits, labels)


@backend.register("argmax_hits")
def argmax_hits(out, scores, labels, dtype):
    flat = _rows(scores, labels)
    if flat is None:
        numpy_backend.kernels["argmax_hits"](out, scores, labels, dtype=dtype)
        return
    out[...] = _hits(*flat)
