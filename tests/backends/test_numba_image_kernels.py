"""The numba image_transform loops agree with the numpy/cupy kernel they replace, for every
interpolation and fill mode, forward and adjoint, float32 and float64. (The full op tests in
tests/graph/test_image_ops.py also run under HIAPI_BACKEND=numba.)"""
import numpy as np
import pytest

from hiapi.backends import image_kernels

numba_image = pytest.importorskip("hiapi.backends.numba_backend.image",
                                  reason="the numba extra is not installed")

RNG = np.random.default_rng(2)
MODES = ("reflect", "wrap", "constant", "nearest", "mirror")


@pytest.mark.parametrize("interpolation", ["nearest", "bilinear"])
@pytest.mark.parametrize("fill_mode", MODES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numba_matches_shared_kernel(interpolation, fill_mode, dtype):
    x = RNG.normal(size=(3, 9, 7, 2)).astype(dtype)
    t = np.array([[0.9, -0.4, 2.2, 0.4, 0.9, -1.7, 0.0, 0.0],
                  [-1.0, 0.0, 6.0, 0.0, 1.0, 0.0, 0.0, 0.0],
                  [1.6, 0.2, -3.1, -0.1, 1.4, -2.5, 0.02, -0.01]], np.float32)
    args = ((5, 11), interpolation, fill_mode)
    expected, got = np.empty((3, 5, 11, 2), dtype), np.empty((3, 5, 11, 2), dtype)
    image_kernels.image_transform(np)(expected, x, t, *args, 0.25)
    numba_image.image_transform(got, x, t, *args, 0.25)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    g = RNG.normal(size=(3, 5, 11, 2)).astype(dtype)
    expected, got = np.empty_like(x), np.empty_like(x)
    image_kernels.image_transform_grad(np)(expected, g, t, (9, 7), interpolation, fill_mode)
    numba_image.image_transform_grad(got, g, t, (9, 7), interpolation, fill_mode)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
