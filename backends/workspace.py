"""Kernel temporaries (im2col columns, a fused program's chunk slots) in planned memory.

A kernel that needs scratch declares its size for given shapes when it registers
(``Backend.register(..., scratch=)``); the executor plans that many bytes in the memory arena
for the op's step (``hiapi.graph.memory.scratch``), like TFLite's and XLA's temporaries, and
lends them as the ``workspace`` keyword. So the plan, and ``memory_report()``, cover every byte
a step uses, and a step allocates nothing. Called outside an executor (constant folding, a
test) a kernel gets no workspace and ``take`` allocates its temporary for that one call.
"""
import numpy as np

ALIGN = 64      # pieces of a workspace start on cache-line (and SIMD load) boundaries


def aligned(nbytes):
    return -(-int(nbytes) // ALIGN) * ALIGN


def take(workspace, shape, dtype, offset=0, xp=np):
    """An uninitialised array of ``shape`` and ``dtype`` at byte ``offset`` (a multiple of
    ``ALIGN``) of ``workspace``, the kernel's planned uint8 buffer (numpy or cupy); a new
    ``xp`` array when ``workspace`` is None."""
    dtype = np.dtype(dtype)
    if workspace is None:
        return xp.empty(shape, dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if offset + nbytes > workspace.nbytes:
        raise ValueError(f"kernel workspace of {workspace.nbytes} bytes is too small for "
                         f"{nbytes} bytes at offset {offset}: the kernel's scratch "
                         f"declaration and its use disagree")
    return workspace[offset:offset + nbytes].view(dtype).reshape(shape)
