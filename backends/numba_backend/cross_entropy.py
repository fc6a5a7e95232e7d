"""Softmax cross-entropy of integer labels (``sparse_softmax_cross_entropy``) as one numba loop.

Why: the numpy kernel makes the log-softmax of the whole batch (five array passes and their
temporaries) to pick one value per row; on a 256x10 batch that was 0.14 ms of an MLP step
whose every other small op takes 3-20 us. Here each row is read three times while it is in
registers: its maximum, the sum of exponentials, the picked logit. The label check of the numpy
kernel happens in the same loop, and a bad label raises the same message.
"""
import numpy as np
from numba import njit

from hiapi.backends.numba_backend.registry import backend
from hiapi.backends.numpy_backend import backend as numpy_backend


@njit(cache=True, inline="always")
def row_loss(logits, r, label):
    """``logsumexp(logits[r]) - logits[r, label]`` in the logits' dtype (also the
    classification totals' per-row term, ``classification_totals.py``)."""
    depth = logits.shape[1]
    top = logits[r, 0]
    for c in range(1, depth):
        top = max(top, logits[r, c])
    total = logits.dtype.type(0)
    for c in range(depth):
        total += np.exp(logits[r, c] - top)
    return np.log(total) - (logits[r, label] - top)


@njit(cache=True)
def _rows(logits, labels, out):
    """``out[r] = logsumexp(logits[r]) - logits[r, labels[r]]``; the position of the first
    label outside the classes, or -1."""
    rows, depth = logits.shape
    for r in range(rows):
        label = labels[r]
        if label < 0 or label >= depth:
            return r
        out[r] = row_loss(logits, r, label)
    return -1


@backend.register("sparse_softmax_cross_entropy")
def sparse_softmax_cross_entropy(out, logits, labels):
    depth = logits.shape[-1]
    # float16 has no numba arithmetic; labels of another length than the rows (a batch the
    # graph left unknown) would be read past their end, where numpy's kernel raises
    if logits.dtype not in (np.float32, np.float64) or labels.dtype.kind not in "iu" or \
            depth == 0 or labels.size * depth != logits.size or not out.flags.c_contiguous:
        numpy_backend.kernels["sparse_softmax_cross_entropy"](out, logits, labels)
        return
    flat = np.ascontiguousarray(logits).reshape(-1, depth)
    bad = _rows(flat, labels.reshape(-1), out.reshape(-1))
    if bad >= 0:            # the numpy kernel finds the same label and raises its message
        numpy_backend.kernels["sparse_softmax_cross_entropy"](out, logits, labels)
