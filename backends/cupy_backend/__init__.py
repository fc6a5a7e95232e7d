"""The cupy backend (``HIAPI_BACKEND=cupy``, ``pip install 'hiapi[cuda12]'`` or ``'hiapi[cuda13]'``): every op on one
NVIDIA GPU.

Arrays live on cupy's current device; the executor's arena is one ``cupy.empty`` allocation from
cupy's memory pool, and every kernel is queued on cupy's current stream, so a step runs without
the host waiting on the GPU until a result is copied back (``to_numpy``). Kernels are cupy calls
where cupy has the operation, and ``cupy.ElementwiseKernel`` programs where one pass beats a chain
of calls (fused elementwise programs, one-hot, dropout's counter-based random numbers, the
sparse cross-entropy pick). See docs/gpu.md for what is accelerated how.

Importing this module fails with ImportError when cupy is missing (``hiapi.backends`` turns it
into the extra to install) and with RuntimeError when cupy is there but no GPU is visible.
"""
import numpy as np

import cupy  # fail here, with the extra to install, if cupy is missing

from hiapi.backends.base import Backend


def _require_device():
    """Fail now, naming the fix, rather than at the first array with a CUDA error code."""
    try:
        count = cupy.cuda.runtime.getDeviceCount()
        reason = "no CUDA device was found"
    except (RuntimeError, OSError) as error:      # CUDARuntimeError is a RuntimeError
        count, reason = 0, f"{type(error).__name__}: {error}"
    if count == 0:
        raise RuntimeError(
            f"backend 'cupy': no NVIDIA GPU / CUDA driver is visible ({reason}). The cupy "
            f"backend needs an NVIDIA GPU with a CUDA 12 or 13 driver (check nvidia-smi "
            f"and CUDA_VISIBLE_DEVICES); on the CPU, use HIAPI_BACKEND=numpy or HIAPI_BACKEND=numba.")


_require_device()


class DeferredChecks:
    """Validity checks computed on the GPU and read on the host at the next copy to the host.

    A kernel that must reject bad input (an out-of-range sparse label) writes a small status
    array instead of reading its input back, which would stall the host every step. The step's
    outputs are copied to the host before any Variable is updated, so a failed check raises at
    the same point, and with the same message, as the numpy kernel's immediate check.
    """
    LIMIT = 64      # read back anyway past this many, so a graph without outputs stays bounded

    def __init__(self):
        self._pending = []

    def add(self, status, describe):
        """``describe(host_status)`` gives the error message, or None when the check passed."""
        self._pending.append((status, describe))
        if len(self._pending) > self.LIMIT:
            self.verify()

    def verify(self):
        pending, self._pending = self._pending, []
        for status, describe in pending:
            message = describe(cupy.asnumpy(status))
            if message:
                raise ValueError(message)


class CupyBackend(Backend):
    name = "cupy"
    xp = cupy
    roofline_gemm_size, roofline_copy_mb = 8192, 2048

    def synchronize(self):
        cupy.cuda.get_current_stream().synchronize()

    def __init__(self):
        super().__init__()
        self.checks = DeferredChecks()

    def empty(self, shape, dtype):
        return cupy.empty(shape, dtype)

    def asarray(self, array, dtype=None):
        """Host arrays are copied to the device; device arrays pass through (cast if asked)."""
        return cupy.asarray(array, dtype=dtype)

    def to_numpy(self, array):
        self.checks.verify()
        return cupy.asnumpy(array)

    def copy_into(self, dst, src):
        cupy.copyto(dst, cupy.asarray(src))


backend = CupyBackend()

from hiapi.backends.cupy_backend import kernels  # noqa: E402,F401  (registers the kernels)
from hiapi.backends.cupy_backend import nn_kernels  # noqa: E402,F401
from hiapi.backends.cupy_backend import conv_kernels  # noqa: E402,F401
from hiapi.backends.cupy_backend import fused  # noqa: E402,F401
from hiapi.backends import image_kernels  # noqa: E402

image_kernels.register(backend)      # image resampling, sin, cos: shared with numpy
