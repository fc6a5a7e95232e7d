"""``gemm_layout``: the column-major GEMM call for a row-major product, checked by carrying it
out as cuBLAS would, reading each operand's memory column-major from its first element."""
import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

from hiapi.backends.gemm_layout import TRANSPOSE, gemm_arguments


def column_major(x, rows, cols, ld, offset=0):
    """The (rows, cols) column-major matrix with leading dimension ``ld`` at ``x``'s memory."""
    item = x.itemsize
    start = as_strided(x, shape=(1,), strides=(item,))          # x's first element
    flat = as_strided(start, shape=(offset + (cols - 1) * ld + rows,), strides=(item,),
                      writeable=True)
    return as_strided(flat[offset:], shape=(rows, cols), strides=(item, ld * item),
                      writeable=True)


def run_call(call, a, b, out):
    """What a column-major BLAS does with ``call``: C = op(A) op(B), A = b, B = a, C = out."""
    for i in range(call.batch):
        left = column_major(b, *((call.k, call.m) if call.transa == TRANSPOSE else
                                 (call.m, call.k)), call.lda, i * call.stride_a)
        right = column_major(a, *((call.n, call.k) if call.transb == TRANSPOSE else
                                  (call.k, call.n)), call.ldb, i * call.stride_b)
        left = left.T if call.transa == TRANSPOSE else left
        right = right.T if call.transb == TRANSPOSE else right
        column_major(out, call.m, call.n, call.ldc, i * call.stride_c)[...] = left @ right


def operand(data, shape, transposed):
    """A row-major array, or a transposed view of one (column-major memory)."""
    if not transposed:
        return data.random(shape)
    return np.swapaxes(data.random(shape[:-2] + shape[:-3:-1]), -1, -2)


@pytest.mark.parametrize("batch", [(), (3,)])
@pytest.mark.parametrize("a_t", [False, True])
@pytest.mark.parametrize("b_t", [False, True])
@pytest.mark.parametrize("mkn", [(5, 4, 3), (1, 4, 3), (5, 1, 3), (5, 4, 1), (1, 1, 1)])
def test_the_call_computes_the_row_major_product(batch, a_t, b_t, mkn):
    m, k, n = mkn
    data = np.random.default_rng(0)
    a, b = operand(data, batch + (m, k), a_t), operand(data, batch + (k, n), b_t)
    out = np.full(batch + (m, n), np.nan)
    call = gemm_arguments(a, b, out)
    assert call is not None
    run_call(call, a, b, out)
    np.testing.assert_allclose(out, a @ b)


def test_a_column_slice_of_a_wider_output_is_written_in_place():
    """A grouped convolution's output block: rows of 8 values, 3 of them written."""
    data = np.random.default_rng(1)
    a, b, wide = data.random((6, 4)), data.random((4, 3)), np.zeros((6, 8))
    call = gemm_arguments(a, b, wide[:, 2:5])
    run_call(call, a, b, wide[:, 2:5])
    np.testing.assert_allclose(wide[:, 2:5], a @ b)
    assert not wide[:, :2].any() and not wide[:, 5:].any()


@pytest.mark.parametrize("case", ["mixed dtypes", "broadcast batch", "transposed output",
                                  "strided rows", "four dimensions", "empty"])
def test_what_a_blas_call_cannot_take_is_declined(case):
    a, b, out = np.ones((4, 3)), np.ones((3, 2)), np.ones((4, 2))
    if case == "mixed dtypes":
        a = a.astype(np.float32)
    elif case == "broadcast batch":
        a, out = np.ones((2, 4, 3)), np.ones((2, 4, 2))
    elif case == "transposed output":
        out = np.ones((2, 4)).T
    elif case == "strided rows":
        a = np.ones((4, 6))[:, ::2]
    elif case == "four dimensions":
        a, b, out = np.ones((2, 2, 4, 3)), np.ones((2, 2, 3, 2)), np.ones((2, 2, 4, 2))
    else:
        a, b, out = np.ones((4, 0)), np.ones((0, 2)), np.ones((4, 2))
    assert gemm_arguments(a, b, out) is None
