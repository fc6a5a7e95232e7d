"""The numba backend's ``Backend`` object, which its kernel modules register into (a module of
its own so that they import it from below the package, which imports them): it starts from
every numpy kernel, which the numba modules then override."""
from hiapi.backends.base import Backend
from hiapi.backends.numpy_backend import backend as numpy_backend

backend = Backend()
backend.name = "numba"
backend.float32_ops = numpy_backend.float32_ops     # numba has no 16-bit arithmetic either
# the optional passes whose ops it runs fast: numba_backend/dense_chain.py and
# numba_backend/classification_totals.py
backend.rewrites = frozenset({"dense_chain", "classification_totals"})
backend.kernels.update(numpy_backend.kernels)
backend.scratch.update(numpy_backend.scratch)
