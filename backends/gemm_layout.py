"""A row-major product ``out = a @ b`` as the arguments of a column-major BLAS GEMM call.

BLAS libraries (cuBLAS) are column-major; our arrays are row-major, or transposed views of
row-major arrays. A row-major matrix read column-major is its transpose, so the product is
computed as ``out^T = b^T a^T``: ``b`` becomes the left operand and ``a`` the right one, each
passed without a copy, with the transpose flag when it is a column-major view (a ``.T``).
Pure shape and stride arithmetic, so it is tested on the CPU (tests/backends/test_gemm_layout.py)
against an emulation of the column-major call.
"""
from typing import NamedTuple

NO_TRANSPOSE, TRANSPOSE = 0, 1


class GemmArguments(NamedTuple):
    """``C (m x n) = op(A) op(B)`` column-major, with A = ``b``, B = ``a``, C = ``out``;
    strides between the matrices of a batch, in elements (0 for a single product)."""
    transa: int
    transb: int
    m: int
    n: int
    k: int
    lda: int
    ldb: int
    ldc: int
    batch: int
    stride_a: int
    stride_b: int
    stride_c: int


def _layout(x, rows, cols):
    """(transpose flag, leading dimension) of a row-major (rows, cols) operand, or None when it
    is neither row- nor column-major in memory (a broadcast or a strided slice)."""
    item = x.itemsize
    s0, s1 = x.strides[-2], x.strides[-1]
    if (s1 == item or cols == 1) and s0 % item == 0 and \
            (rows == 1 or s0 // item >= max(cols, 1)):
        return NO_TRANSPOSE, s0 // item if rows > 1 else max(cols, 1)
    if (s0 == item or rows == 1) and s1 % item == 0 and \
            (cols == 1 or s1 // item >= max(rows, 1)):
        return TRANSPOSE, s1 // item if cols > 1 else max(rows, 1)
    return None


def gemm_arguments(a, b, out):
    """The column-major call computing ``out[...] = a @ b``, or None when it takes a copy
    (mixed dtypes, broadcast batches, an output that is not row-major, an empty product)."""
    if a.dtype != out.dtype or b.dtype != out.dtype or not a.ndim == b.ndim == out.ndim or \
            a.ndim not in (2, 3):
        return None
    m, k = a.shape[-2:]
    n = b.shape[-1]
    if b.shape[-2] != k or out.shape[-2:] != (m, n) or 0 in (m, n, k) or \
            a.shape[:-2] != b.shape[:-2] or a.shape[:-2] != out.shape[:-2]:
        return None
    la, lb, lc = _layout(a, m, k), _layout(b, k, n), _layout(out, m, n)
    if la is None or lb is None or lc is None or lc[0] != NO_TRANSPOSE:
        return None
    batch, strides = 1, (0, 0, 0)
    if a.ndim == 3:
        item = a.itemsize
        if any(x.strides[0] % item for x in (a, b, out)) or out.strides[0] == 0:
            return None
        batch, strides = a.shape[0], tuple(x.strides[0] // item for x in (b, a, out))
    return GemmArguments(lb[0], la[0], n, m, k, lb[1], la[1], lc[1], batch, *strides)
