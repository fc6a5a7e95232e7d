"""The numba backend (``HIAPI_BACKEND=numba``, ``pip install 'hiapi[numba]'``).

It starts from every numpy kernel and overrides the hot ones with JIT-compiled loops; so far
that is fused elementwise programs, each compiled to one parallel loop (cached on disk, so a
second run starts fast), and max pooling with its gradients. Threads follow ``NUMBA_NUM_THREADS``.
"""
import os

import numba  # fail here, with the extra to install, if numba is missing

# numba's OpenMP layer keeps its threads spinning after each parallel loop, starving OpenBLAS's
# GEMM threads on a machine with few cores (measured: MLP step 59 ms with it, 12.6 ms with the
# workqueue layer, on 2 cores). A user's explicit NUMBA_THREADING_LAYER still wins.
if "NUMBA_THREADING_LAYER" not in os.environ:
    numba.config.THREADING_LAYER = "workqueue"

from hiapi.backends.base import Backend
from hiapi.backends.numpy_backend import backend as numpy_backend

backend = Backend()
backend.name = "numba"
backend.kernels.update(numpy_backend.kernels)

from hiapi.backends.numba_backend import conv, fused, pooling  # noqa: E402,F401  (overrides)
