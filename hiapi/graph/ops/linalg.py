"""Matrix product with numpy's ``matmul`` semantics (leading dimensions broadcast)."""
from hiapi.graph.op_namespace import ops as O
from hiapi.graph.op import Op, as_vars, broadcast_shapes, result_dtype


class MatMul(Op):
    name = "matmul"

    def infer(self, a, b):
        if a.ndim < 2 or b.ndim < 2:
            raise ValueError(f"matmul: both operands need rank >= 2, got shapes {a.shape} and "
                             f"{b.shape} (reshape a vector to (1, n) or (n, 1))")
        k_a, k_b = a.shape[-1], b.shape[-2]
        if k_a is not None and k_b is not None and k_a != k_b:
            raise ValueError(f"matmul: inner dimensions differ: {a.shape} @ {b.shape} "
                             f"({k_a} != {k_b})")
        batch = broadcast_shapes("matmul", a.shape[:-2], b.shape[:-2])
        return batch + (a.shape[-2], b.shape[-1]), result_dtype(a, b)

    def grad(self, inputs, y, g):
        a, b = inputs
        return [O.unbroadcast(matmul(g, O.swapaxes(b, -1, -2)), a),
                O.unbroadcast(matmul(O.swapaxes(a, -1, -2), g), b)]


def matmul(a, b):
    return MatMul()(*as_vars(a, b))


class Gemm(Op):
    """``alpha * (a @ b) + beta * c`` for 2-D ``a``, ``b``, ``c`` and scalar ``alpha``, ``beta``:
    BLAS's general matrix product. Built by the ``gemm_accumulate`` pass from an optimizer's
    ``m * v - lr * (x.T @ g)``, so the product accumulates into ``c``'s storage in one pass
    (``backends/blas.py``). The output may overwrite ``c`` (BLAS reads each element of C before
    writing it) but never ``a`` or ``b``, which are still being read."""
    name = "gemm"
    inplace = True
    inplace_inputs = (2,)

    def infer(self, a, b, c, alpha, beta):
        if a.ndim != 2 or b.ndim != 2 or c.ndim != 2:
            raise ValueError(f"gemm: a, b and c must be 2-D, got shapes {a.shape}, {b.shape}, "
                             f"{c.shape}")
        if alpha.ndim != 0 or beta.ndim != 0:
            raise ValueError(f"gemm: alpha and beta must be scalars, got shapes {alpha.shape} "
                             f"and {beta.shape}")
        product, dtype = MatMul().infer(a, b)
        if not all(p is None or q is None or p == q for p, q in zip(product, c.shape)):
            raise ValueError(f"gemm: c has shape {c.shape}, the product a @ b {product}")
        if len({a.dtype, b.dtype, c.dtype}) != 1 or a.dtype.kind != "f":
            raise TypeError(f"gemm: a, b and c need one floating dtype, got {a.dtype}, "
                            f"{b.dtype}, {c.dtype}")
        return c.shape, dtype

    def grad(self, inputs, y, g):
        a, b, c, alpha, beta = inputs
        return [alpha * matmul(g, O.transpose(b)), alpha * matmul(O.transpose(a), g), beta * g,
                O.sum(g * matmul(a, b)), O.sum(g * c)]


def gemm(a, b, c, alpha=1.0, beta=1.0):
    """``alpha * (a @ b) + beta * c`` (2-D operands, scalar ``alpha`` and ``beta``)."""
    a, b, c = as_vars(a, b, c)
    alpha, beta = (O.cast(s, a.dtype) for s in as_vars(a, alpha, beta)[1:])
    return Gemm()(a, b, c, alpha, beta)
