"""The im2col lowering taken a few images at a time gives the same convolution and gradients
as one chunk for the whole batch, on every CPU backend, grouped and strided and padded."""
import numpy as np
import pytest

from hiapi.backends.numpy_backend import im2col
from numpy_references import conv2d as conv_reference

RNG = np.random.default_rng(7)
CASES = [((2, 2), "same", (1, 1), 1), ((1, 1), "valid", (2, 1), 2), ((2, 1), "same", (1, 2), 1)]


def kernels(name):
    if name == "numba":
        pytest.importorskip("numba", reason="the numba extra is not installed")
        from hiapi.backends.numba_backend import backend
    else:
        from hiapi.backends.numpy_backend import backend
    return [backend.kernels[op] for op in ("conv2d", "conv2d_filter_grad", "conv2d_input_grad")]


def run_all(name, x, w, g, conv):
    forward, filter_grad, input_grad = kernels(name)
    out = np.empty(g.shape, x.dtype)
    forward(out, x, w, **conv)
    dw = np.empty(w.shape, x.dtype)
    filter_grad(dw, x, g, w.shape[:2], **conv)
    dx = np.empty(x.shape, x.dtype)
    input_grad(dx, g, w, x.shape[1:3], **conv)
    return out, dw, dx


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("strides, padding, dilation, groups", CASES)
def test_chunked_lowering_matches_whole_batch(backend, strides, padding, dilation, groups,
                                              monkeypatch):
    conv = dict(strides=strides, padding=padding, dilation=dilation, groups=groups)
    x = RNG.normal(size=(5, 9, 8, 4))
    w = RNG.normal(size=(3, 2, 4 // groups, 6))
    expected_out = conv_reference(x, w, strides, padding, dilation, groups)
    g = RNG.normal(size=expected_out.shape)
    whole = run_all(backend, x, w, g, conv)
    monkeypatch.setattr(im2col, "CHUNK_BYTES", 1)           # one image per chunk
    chunked = run_all(backend, x, w, g, conv)
    np.testing.assert_allclose(whole[0], expected_out, rtol=1e-12, atol=1e-12)
    for a, b in zip(whole, chunked):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
