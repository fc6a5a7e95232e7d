"""A process-wide count of writes to Variables, for caches derived from their values.

Why: a kernel may keep a copy of a weight in the layout it computes fastest with (the dense
chain keeps each weight transposed, ``backends/numba_backend/dense_chain.py``), made once and
used for every batch of a ``predict``. It must know when the weight changed. Checking the
values would cost what the copy saves, so whatever writes Variables says so here: a compiled
step that has updates (every train step, every ``apply_gradients``) before it runs,
``Variable.assign`` and setting ``Variable.value``, the distributed strategies' broadcasts,
and ``predict``/``evaluate`` as they start, once a Variable's own array has been handed out
(``Variable.value`` outside a step), so that a user's in-place edit of it between calls is
seen too. A copy is valid while the count is the one it was made at.

Why only once handed out: counting every ``predict`` as a write made each call check the
weights again (28 us for a 784-128-10 MLP, a third of a one-batch ``predict``) in programs
that never hold a weight's array: ``get_weights`` and ``numpy()`` return copies, and the
library itself reads ``Variable.storage``. Once handed out, it stays so for the process: the
caller may keep the array and edit it at any later time.
"""
_writes = 0
_handed_out = False


def note():
    """Something may have written a Variable (call before or after the write)."""
    global _writes
    _writes += 1


def count():
    return _writes


def hand_out():
    """A Variable's own array left the library (``Variable.value``): it may be edited in place
    from now on, at any time."""
    global _handed_out
    _handed_out = True


def note_edits():
    """Called as ``predict``/``evaluate`` start: a write, if arrays that a user could have
    edited in place were handed out."""
    if _handed_out:
        note()
