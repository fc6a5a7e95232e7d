"""The numba backend (``HIAPI_BACKEND=numba``, ``pip install 'hiapi[numba]'``).

It starts from every numpy kernel and overrides the hot ones with JIT-compiled loops: fused
elementwise programs, each compiled to one parallel loop (cached on disk, so a second run starts
fast), im2col/col2im around the convolution GEMMs, and max pooling with its gradients.

On few cores, start Python with ``OPENBLAS_THREAD_TIMEOUT=4``: OpenBLAS otherwise keeps its
threads spinning for ~2^28 cycles after each GEMM, and they take the cores from numba's loops
that follow (measured: CNN step 77 -> 64 ms on 2 cores). It must be set before numpy is
imported, so this module cannot set it for you.
"""
import os

import numba  # fail here, with the extra to install, if numba is missing

# numba's OpenMP layer keeps its threads spinning after each parallel loop, starving OpenBLAS's
# GEMM threads on a machine with few cores (measured: MLP step 59 ms with it, 12.6 ms with the
# workqueue layer, on 2 cores). A user's explicit NUMBA_THREADING_LAYER still wins.
if "NUMBA_THREADING_LAYER" not in os.environ:
    numba.config.THREADING_LAYER = "workqueue"

# Threads: NUMBA_NUM_THREADS if set, else OMP_NUM_THREADS (what BLAS uses), else every core.
if "NUMBA_NUM_THREADS" not in os.environ and os.environ.get("OMP_NUM_THREADS", "").isdigit():
    numba.set_num_threads(max(1, min(int(os.environ["OMP_NUM_THREADS"]),
                                     numba.config.NUMBA_NUM_THREADS)))

from hiapi.backends.base import Backend
from hiapi.backends.numpy_backend import backend as numpy_backend

backend = Backend()
backend.name = "numba"
backend.kernels.update(numpy_backend.kernels)

from hiapi.backends.numba_backend import conv, fused, gather, pooling  # noqa: E402,F401  (overrides)
