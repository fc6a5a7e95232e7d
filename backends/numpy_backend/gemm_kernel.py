"""The ``gemm`` kernel: ``out = alpha * a @ b + beta * c`` (the op of the ``gemm_accumulate``
pass), on the numpy and numba backends alike."""
import numpy as np

from hiapi.backends import blas, gemm_bands
from hiapi.backends.numpy_backend.registry import backend


@backend.register("gemm")
def gemm(out, a, b, c, alpha, beta):
    # BLAS's own beta: the product accumulates into c's storage in one pass (backends/blas.py).
    # Without a usable BLAS binding (or with operands BLAS cannot read as they are) the
    # product goes through a temporary, outside the memory plan: a fallback, not the plan.
    # Whole, in the threaded driver's blocks of k, cut along k or in fixed bands
    # (backends/gemm_bands.py): the same bits on any number of threads.
    if blas.can_run(out, a, b) and out.size:
        if not np.may_share_memory(out, c):
            np.copyto(out, c)
        def product(part, a_part, b_part, part_beta=beta):    # whole, a band or a k piece
            blas.gemm(part, a_part, b_part, alpha, part_beta)
        gemm_bands.run(out, a, b, product, product, beta, alpha)
        return
    product = np.empty(out.shape, np.result_type(a, b))
    gemm_bands.matmul(product, a, b)
    np.multiply(c, beta, out=out)
    product *= alpha
    out += product
