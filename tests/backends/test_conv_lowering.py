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


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("strides, padding, dilation, groups", CASES)
def test_row_bands_fit_the_declared_scratch(backend, strides, padding, dilation, groups,
                                            monkeypatch):
    """An image whose columns exceed the chunk is taken a band of output rows at a time: the
    results equal the whole-batch lowering, and every band's temporaries fit the workspace
    the kernels declare (``take`` raises when a piece does not fit), which is smaller than one
    image's columns."""
    conv = dict(strides=strides, padding=padding, dilation=dilation, groups=groups)
    x = RNG.normal(size=(2, 9, 8, 4))
    w = RNG.normal(size=(3, 2, 4 // groups, 6))
    g = RNG.normal(size=conv_reference(x, w, strides, padding, dilation, groups).shape)
    whole = run_all(backend, x, w, g, conv)
    row_bytes = g.shape[2] * 3 * 2 * (4 // groups) * x.itemsize
    forward, filter_grad, input_grad = kernels(backend)
    declare = dict(zip(("conv2d", "conv2d_filter_grad", "conv2d_input_grad"),
                       im2col.conv_scratch(im2col.numpy_lowering_bytes if backend == "numpy"
                                           else im2col.no_lowering_bytes)))
    attrs = dict(conv)
    shapes = {"conv2d": (g.shape, x.shape, w.shape),
              "conv2d_filter_grad": (w.shape, x.shape, g.shape),
              "conv2d_input_grad": (x.shape, g.shape, w.shape)}
    extra = {"conv2d_filter_grad": {"kernel_hw": w.shape[:2]},
             "conv2d_input_grad": {"input_hw": x.shape[1:3]}}

    def declared():
        return {name: fn(shapes[name], [x.dtype] * 3, {**attrs, **extra.get(name, {})})
                for name, fn in declare.items()}

    monkeypatch.setattr(im2col, "CHUNK_BYTES", g.shape[1] * row_bytes)    # one image
    per_image = declared()
    monkeypatch.setattr(im2col, "CHUNK_BYTES", 2 * row_bytes)             # bands, of
    monkeypatch.setattr(im2col, "BAND_BYTES", 2 * row_bytes)              # two output rows
    space = {name: np.empty(n, np.uint8) for name, n in declared().items()}
    assert all(space[name].nbytes < per_image[name] for name in space)
    out, dw, dx = np.empty(g.shape), np.empty(w.shape), np.empty(x.shape)
    forward(out, x, w, **conv, workspace=space["conv2d"])
    filter_grad(dw, x, g, w.shape[:2], **conv, workspace=space["conv2d_filter_grad"])
    input_grad(dx, g, w, x.shape[1:3], **conv, workspace=space["conv2d_input_grad"])
    for a, b in zip(whole, (out, dw, dx)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
