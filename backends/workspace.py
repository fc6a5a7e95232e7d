"""Scratch memory for kernels that need a temporary (im2col columns, for one): one growing buffer
per thread, lent to one kernel call at a time.

The memory plan covers every graph value but not a kernel's private temporaries; allocating
those per call costs page faults on every step (an im2col buffer of a small convnet is ~20 MB).
Like cuDNN's workspace, the buffer is sized to the largest request seen and then reused, so a
step allocates nothing. Kernels run one at a time on a thread, so one buffer per thread is safe
as long as a kernel is done with its scratch before it returns.
"""
import threading

import numpy as np

_local = threading.local()


def scratch(shape, dtype):
    """An uninitialised array of ``shape`` and ``dtype`` in this thread's workspace."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    buffer = getattr(_local, "buffer", None)
    if buffer is None or buffer.nbytes < nbytes:
        _local.buffer = buffer = np.empty(max(nbytes, 1), np.uint8)
    return buffer[:nbytes].view(dtype).reshape(shape)


def nbytes():
    """Size of this thread's workspace (0 before any kernel asked for one)."""
    buffer = getattr(_local, "buffer", None)
    return 0 if buffer is None else buffer.nbytes
