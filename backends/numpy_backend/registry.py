"""The numpy backend's ``Backend`` object, which its kernel modules register into: a module of
its own so that they import it from below the package, which imports them."""
from hiapi.backends.base import Backend

backend = Backend()
backend.name = "numpy"
# numpy has no 16-bit GEMM (its float16 matmul is an element loop, ~60x slower than float32
# BLAS) and sums 16-bit values with 16-bit partial sums: these run on float32 copies
backend.float32_ops = frozenset({"matmul", "conv2d", "conv2d_input_grad", "conv2d_filter_grad",
                                 "sum", "sum_like", "softmax_cross_entropy",
                                 "sparse_softmax_cross_entropy"})
