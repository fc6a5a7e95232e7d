"""The cupy backend: every op on one NVIDIA GPU (``HIAPI_BACKEND=cupy``; ``pip install
'hiapi[cuda12]'`` or ``'hiapi[cuda13]'``, as the driver's CUDA major).

Arrays live on cupy's current device; the executor's arena is one ``cupy.empty`` allocation from
cupy's memory pool, and every kernel is queued on cupy's current stream, so a step runs without
the host waiting on the GPU until a result is copied back (``to_numpy``). Kernels are cupy calls
where cupy has the operation, and ``cupy.ElementwiseKernel`` programs where one pass beats a chain
of calls (fused elementwise programs, one-hot, dropout's counter-based random numbers, the
sparse cross-entropy pick). See docs/gpu.md for what is accelerated how.

Importing this module fails with ImportError when cupy is missing (``hiapi.backends`` turns it
into the extra to install) and with RuntimeError when cupy is there but no GPU is visible.
"""
# backend: what the kernel modules register into
from hiapi.backends.cupy_backend.registry import (  # noqa: F401
    CupyBackend, DeferredChecks, backend)

from hiapi.backends.cupy_backend import kernels  # noqa: E402,F401  (registers the kernels)
from hiapi.backends.cupy_backend import nn_kernels  # noqa: E402,F401
from hiapi.backends.cupy_backend import conv_kernels  # noqa: E402,F401
from hiapi.backends.cupy_backend import fused  # noqa: E402,F401
from hiapi.backends import classification_totals  # noqa: E402
from hiapi.backends import dense_chain_layers, image_kernels  # noqa: E402

image_kernels.register(backend)      # image resampling, sin, cos: shared with numpy
dense_chain_layers.register(backend)     # a dense chain layer by layer: shared with numpy
classification_totals.register(backend)  # a classifier's step totals, op by op: shared with numpy
