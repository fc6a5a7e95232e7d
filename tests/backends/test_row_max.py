"""The numba backend's maximum over the last axis: numpy's values (NaN propagated, infinities,
signed zeros kept as numpy keeps them), and numpy's kernel for every other case."""
import numpy as np
import pytest

pytest.importorskip("numba", reason="the numba extra is not installed")

from hiapi.backends.numba_backend import backend, row_max  # noqa: E402


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(32, 10), (1, 1), (3, 4, 7), (5, 1), (0, 3)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_values_equal_numpys(shape, keepdims, dtype):
    rng = np.random.default_rng(sum(shape))
    x = rng.normal(size=shape).astype(dtype)
    if x.size > 8:
        flat = x.reshape(-1)
        flat[[1, 5]] = np.nan                   # a NaN early in a row and one late
        flat[7] = np.inf
        flat[-1] = -np.inf
        x[..., -1][x[..., -1] > 1] = -0.0
    expected = np.max(x, axis=-1, keepdims=keepdims)
    out = np.full(expected.shape, 7.0, dtype)
    backend.kernels["max"](out, x, axis=(x.ndim - 1,), keepdims=keepdims)
    np.testing.assert_array_equal(out, expected)
    assert np.array_equal(np.signbit(out), np.signbit(expected))


def test_other_axes_and_arrays_go_to_numpy(monkeypatch):
    def refuse(*args):
        raise AssertionError("the row loop ran for another reduction")
    monkeypatch.setattr(row_max, "_row_max", refuse)
    x = np.random.default_rng(1).normal(size=(6, 5, 4)).astype(np.float32)
    cases = [(x, (0,)), (x, (1, 2)), (x.transpose(0, 2, 1), (2,)), (x.astype(np.float16), (2,)),
             (np.arange(20).reshape(4, 5), (1,))]
    for array, axis in cases:
        expected = np.max(array, axis=axis)
        out = np.empty(expected.shape, expected.dtype)
        backend.kernels["max"](out, array, axis=axis, keepdims=False)
        np.testing.assert_array_equal(out, expected)
