"""The cupy backend's ``Backend`` object (with its class and the checks it defers), which its
kernel modules register into: a module of its own so that they import it from below the
package, which imports them."""

import cupy  # fail here, with the extra to install, if cupy is missing

from hiapi.backends.base import Backend
from hiapi.backends.cupy_backend.step_graphs import StepGraphs


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
            f"and CUDA_VISIBLE_DEVICES); on the CPU, use HIAPI_BACKEND=numpy or "
            f"HIAPI_BACKEND=numba.")


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

    def mark(self):
        """Where the pending list ends now (``take_since`` takes what was added after it)."""
        return len(self._pending)

    def take_since(self, mark):
        """The checks added after ``mark``, removed from the pending list: what a recorded
        step's kernels registered, re-registered with ``extend`` after each replay."""
        taken, self._pending[mark:] = self._pending[mark:], []
        return taken

    def extend(self, checks):
        self._pending.extend(checks)
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

    def step_replay(self, executable):
        """The step recorded as a CUDA graph and replayed (``step_graphs``), or None."""
        return StepGraphs.for_executable(executable, self.checks)

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
