"""The numba backend sums over leading axes (bias gradients) in one loop, with numpy's bits;
other reductions stay on numpy's kernel."""
import numpy as np
import pytest

pytest.importorskip("numba", reason="the numba extra is not installed")

from hiapi.backends.numba_backend import backend, leading_sum  # noqa: E402


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape, axis", [((256, 1024), (0,)), ((64, 32, 32, 32), (0, 1, 2)),
                                         ((7, 3, 5), (0,)), ((1, 10), (0,)),
                                         ((256, 1), (0,)), ((4, 8, 8, 1), (0, 1, 2))])
@pytest.mark.parametrize("keepdims", [False, True])
def test_bits_equal_numpys(shape, axis, keepdims, dtype):
    x = np.random.default_rng(0).normal(size=shape).astype(dtype)
    expected = np.sum(x, axis=axis, keepdims=keepdims)
    out = np.full(expected.shape, np.nan, dtype)
    backend.kernels["sum"](out, x, axis=axis, keepdims=keepdims)
    assert out.tobytes() == expected.tobytes()


def test_other_reductions_go_to_numpy(monkeypatch):
    def refuse(*args):
        raise AssertionError("the leading-axes loop ran for another reduction")
    monkeypatch.setattr(leading_sum, "_add_rows", refuse)
    x = np.random.default_rng(1).normal(size=(6, 5, 4)).astype(np.float32)
    for axis in [(1,), (0, 2), (0, 1, 2)]:
        expected = np.sum(x, axis=axis)
        out = np.empty(expected.shape, np.float32)
        backend.kernels["sum"](out, x, axis=axis, keepdims=False)
        np.testing.assert_array_equal(out, expected)
    ints, half = np.arange(20).reshape(4, 5), x.astype(np.float16)
    for array in (ints, half, x.transpose(1, 0, 2)):              # ints, float16, strided
        out = np.empty(array.shape[1:], np.sum(array, axis=0).dtype)
        backend.kernels["sum"](out, array, axis=(0,), keepdims=False)
        np.testing.assert_array_equal(out, np.sum(array, axis=0))
