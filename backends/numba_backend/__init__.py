"""The numba backend (``HIAPI_BACKEND=numba``, ``pip install 'hiapi[numba]'``).

It starts from every numpy kernel and overrides the hot ones with JIT-compiled loops: fused
elementwise programs, each compiled to one parallel loop (cached on disk, so a second run starts
fast), im2col/col2im around the convolution GEMMs, and max pooling with its gradients.

Its threads follow hiapi's thread budget (``hiapi.threads``), like BLAS's.
"""
import os

import numba  # fail here, with the extra to install, if numba is missing

# numba's OpenMP layer keeps its threads spinning after each parallel loop, starving OpenBLAS's
# GEMM threads on a machine with few cores (measured: MLP step 59 ms with it, 12.6 ms with the
# workqueue layer, on 2 cores). A user's explicit NUMBA_THREADING_LAYER still wins.
if "NUMBA_THREADING_LAYER" not in os.environ:
    numba.config.THREADING_LAYER = "workqueue"

from hiapi.runtime import threads  # noqa: E402

threads.apply()    # numba's pool to the budget, now that numba is loaded

from hiapi.backends.numba_backend.registry import backend  # noqa: E402

# overrides of the numpy kernels
from hiapi.backends.numba_backend import conv, fused, gather, image, pooling  # noqa: E402,F401
from hiapi.backends.numba_backend import cross_entropy, leading_sum, one_hot  # noqa: E402,F401
from hiapi.backends.numba_backend import row_max  # noqa: E402,F401
from hiapi.backends.numba_backend import classification_totals, dense_chain  # noqa: E402,F401
from hiapi.backends.numba_backend import winograd  # noqa: E402,F401  (after conv: in front of it)

from hiapi.backends.numba_backend import sixteen_bits  # noqa: E402
from hiapi.backends.numpy_backend import backend as numpy_backend  # noqa: E402

sixteen_bits.fall_back(backend, numpy_backend)    # last: every override above is wrapped
