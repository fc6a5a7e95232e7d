"""The numba backend (``HIAPI_BACKEND=numba``, ``pip install 'hiapi[numba]'``).

It starts from every numpy kernel and overrides the hot ones with JIT-compiled loops; so far
that is fused elementwise programs, each compiled to one parallel loop (cached on disk, so a
second run starts fast). Threads follow ``NUMBA_NUM_THREADS``.
"""
import numba  # noqa: F401  (fail here, with the extra to install, if numba is missing)

from hiapi.backends.base import Backend
from hiapi.backends.numpy_backend import backend as numpy_backend

backend = Backend()
backend.name = "numba"
backend.kernels.update(numpy_backend.kernels)

from hiapi.backends.numba_backend import fused  # noqa: E402,F401  (registers overrides)
