"""A process-wide count of writes to Variables, for caches derived from their values.

Why: a kernel may keep a copy of a weight in the layout it computes fastest with (the dense
chain keeps each weight transposed, ``backends/numba_backend/dense_chain.py``), made once and
used for every batch of a ``predict``. It must know when the weight changed. Checking the
values would cost what the copy saves, so whatever writes Variables says so here: a compiled
step that has updates (every train step, every ``apply_gradients``) before it runs,
``Variable.assign`` and setting ``Variable.value``, the distributed strategies' broadcasts,
and ``predict``/``evaluate`` as they start (so a user's in-place edit of ``variable.value``
between calls is seen too). A copy is valid while the count is the one it was made at.
"""
_writes = 0


def note():
    """Something may have written a Variable (call before or after the write)."""
    global _writes
    _writes += 1


def count():
    return _writes
