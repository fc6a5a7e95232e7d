"""The ``gemm`` kernel: ``out = alpha * a @ b + beta * c`` (the op of the ``gemm_accumulate``
pass), on the numpy and numba backends alike."""
import numpy as np

from hiapi.backends import blas
from hiapi.backends.numpy_backend import backend


@backend.register("gemm")
def gemm(out, a, b, c, alpha, beta):
    # BLAS's own beta: the product accumulates into c's storage in one pass (backends/blas.py).
    # Without a usable BLAS binding (or with operands BLAS cannot read as they are) the
    # product goes through a temporary, outside the memory plan: a fallback, not the plan.
    if blas.can_run(out, a, b):
        if not np.may_share_memory(out, c):
            np.copyto(out, c)
        blas.gemm(out, a, b, alpha, beta)
        return
    product = np.matmul(a, b)
    np.multiply(c, beta, out=out)
    product *= alpha
    out += product
