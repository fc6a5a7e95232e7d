"""Matrix product with numpy's ``matmul`` semantics (leading dimensions broadcast)."""
from hiapi.graph import ops as O
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
