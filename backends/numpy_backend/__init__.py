"""The reference backend: every op as plain numpy, writing into preallocated output buffers.

Every other backend is tested against this one, so clarity wins over speed here.
"""
from hiapi.backends.numpy_backend.registry import backend
from hiapi.backends.numpy_backend import kernels  # noqa: E402,F401  (registers the kernels)
from hiapi.backends.numpy_backend import conv_kernels, pool_kernels  # noqa: E402,F401
from hiapi.backends.numpy_backend import fused_kernel, gemm_kernel  # noqa: E402,F401
from hiapi.backends.numpy_backend import where_kernel  # noqa: E402,F401
from hiapi.backends import classification_totals  # noqa: E402
from hiapi.backends import dense_chain_layers, image_kernels  # noqa: E402

image_kernels.register(backend)      # image resampling, sin, cos: shared with cupy
dense_chain_layers.register(backend)     # a dense chain layer by layer: shared with cupy
classification_totals.register(backend)  # a classifier's step totals, op by op: shared with cupy
