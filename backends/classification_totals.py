"""The classification totals (``hiapi/graph/passes/classification_totals.py``) as the ops they
replaced, each the backend's own kernel, one after the other. ``register(backend)`` adds them to
a backend's registry (numpy and cupy; numba inherits numpy's and overrides them).

Only numba asks for the rewrite (``Backend.rewrites``; its one-loop kernels are
``numba_backend/classification_totals.py``); these are what those loops are tested against
and what runs the ops anywhere else.
"""
import numpy as np


def register(backend):
    kernels = backend.kernels

    @backend.register("sparse_cross_entropy_total")
    def sparse_cross_entropy_total(out, logits, labels):
        rows = backend.empty(labels.shape, out.dtype)
        kernels["sparse_softmax_cross_entropy"](rows, logits, labels)
        kernels["sum"](out, rows, axis=tuple(range(rows.ndim)), keepdims=False)

    @backend.register("argmax_hits")
    def argmax_hits(out, scores, labels, dtype):
        top = backend.empty(labels.shape, np.int64)
        kernels["argmax"](top, scores, axis=scores.ndim - 1)
        out[...] = (top == labels).sum()
