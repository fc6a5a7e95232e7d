"""``backends/blas.py``: BLAS's gemm with beta, called on numpy's own BLAS, against numpy; and
the ``gemm`` kernel's fallback (matmul through a temporary) giving the same numbers."""
import numpy as np
import pytest

from hiapi.backends import blas
from hiapi.backends.numpy_backend.gemm_kernel import gemm

RNG = np.random.default_rng(5)


def test_numpys_blas_is_found():
    """numpy's wheels (and the usual system BLAS) export cblas_?gemm under a name listed in
    blas.NAMES; if this fails, the fast path is off everywhere and a name is missing."""
    assert blas.available(np.float32) and blas.available(np.float64)


def layouts(m, k, n, dtype):
    """(a, b) pairs as a GEMM meets them: contiguous, transposed views, rows with a gap."""
    a, b = RNG.normal(size=(m, k)).astype(dtype), RNG.normal(size=(k, n)).astype(dtype)
    wide = RNG.normal(size=(m, k + 3)).astype(dtype)[:, :k]
    yield a, b
    yield np.ascontiguousarray(a.T).T, b
    yield a, np.ascontiguousarray(b.T).T
    yield wide, b
    yield wide.T.copy().T, np.ascontiguousarray(b.T).T


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(7, 5, 3), (1, 4, 6), (6, 4, 1), (3, 1, 2)])
def test_gemm_matches_numpy(dtype, shape):
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    for a, b in layouts(*shape, dtype):
        assert blas.can_run(np.empty(shape[::2], dtype), a, b)
        c = RNG.normal(size=(shape[0], shape[2])).astype(dtype)
        out = c.copy()
        blas.gemm(out, a, b, -0.25, 0.9)
        expected = 0.9 * c.astype(np.float64) - 0.25 * (a.astype(np.float64) @ b)
        np.testing.assert_allclose(out, expected, rtol=rtol, atol=rtol)


def test_arrays_blas_cannot_read_are_refused():
    a = RNG.normal(size=(6, 8))[::2, ::2]          # neither rows nor columns contiguous
    b, out = RNG.normal(size=(4, 3)), np.empty((3, 3))
    assert not blas.can_run(out, a, b)
    assert not blas.can_run(out, a[::-1, ::-1].copy()[::-1], b)      # rows run backwards
    assert not blas.can_run(out, a.copy(), b.astype(np.float32))     # mixed dtypes
    assert not blas.can_run(np.empty((3, 3), order="F"), a.copy(), b)    # columns of out


def test_output_may_be_a_band_of_columns():
    a, b = RNG.normal(size=(5, 4)), RNG.normal(size=(4, 9))
    out = np.ones((5, 9))
    blas.gemm(out[:, 3:7], a, b[:, 3:7], 1.0, 2.0)
    expected = np.ones((5, 9))
    expected[:, 3:7] = 2.0 + a @ b[:, 3:7]
    np.testing.assert_allclose(out, expected, rtol=1e-12)


def test_empty_inner_dimension_scales_c():
    out = np.ones((2, 3))
    blas.gemm(out, np.empty((2, 0)), np.empty((0, 3)), 5.0, 0.5)
    np.testing.assert_array_equal(out, np.full((2, 3), 0.5))


@pytest.mark.parametrize("in_place", [False, True])
def test_kernel_blas_path_and_fallback_agree(in_place):
    x, g = RNG.normal(size=(16, 9)), RNG.normal(size=(16, 5))
    c = RNG.normal(size=(9, 5))
    alpha, beta = np.array(-0.1), np.array(0.9)
    expected = 0.9 * c - 0.1 * x.T @ g
    fast = c.copy() if in_place else np.empty_like(c)
    gemm(fast, x.T, g, fast if in_place else c, alpha, beta)
    slow = c.copy() if in_place else np.empty_like(c)
    strided = np.repeat(g, 2, axis=1)[:, ::2]         # as g, but BLAS cannot read it as is
    assert not blas.can_run(slow, x.T, strided)
    gemm(slow, x.T, strided, slow if in_place else c, alpha, beta)
    np.testing.assert_allclose(fast, expected, rtol=1e-12)
    np.testing.assert_allclose(slow, expected, rtol=1e-12)
