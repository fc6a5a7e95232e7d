"""Winograd F(2x2, 3x3) convolution (``backends/winograd.py``): the numba backend's kernels,
and the same algorithm with numpy's tile transforms (``numpy_backend/winograd_tiles.py``).

Tolerances, against direct convolution (the plain-loop reference, and im2col for the
gradients): float64 to 1e-12 of the output's largest magnitude (measured ~1e-15: the
transforms only add and halve); float32 to 1e-5 (measured 2-5e-7: the transforms' sums of up
to 9 terms round once more than a direct dot product). The finite-difference gradient checks
run on numba with the channel threshold lowered, so the small shapes of ``check_op`` go
through it.
"""
import numpy as np
import pytest

from check_op import check_op
from numpy_references import conv2d as conv_reference
from hiapi import backends
from hiapi.backends import chunk_workers, winograd
from hiapi.backends.numpy_backend import im2col
from hiapi.graph import ops

RNG = np.random.default_rng(14)
NAMES = winograd.NAMES
# (batch, height, width, channels, filters, padding): odd sizes leave partial tiles
SHAPES = [(3, 7, 9, 16, 16, "same"), (2, 8, 8, 16, 20, "valid"), (5, 5, 6, 17, 16, "valid"),
          (2, 13, 13, 32, 48, "valid")]


class Kernels:
    """The three Winograd convolutions with their scratch declarations: the numba backend's
    registered kernels (Winograd where it applies), or Winograd with numpy's transforms
    (``winograd_tiles``, not registered on the numpy backend, which keeps im2col)."""

    def __init__(self, name):
        if name == "numba":
            pytest.importorskip("numba", reason="the numba extra is not installed")
            from hiapi.backends.numba_backend import backend
            self.kernels, self.scratch = backend.kernels, backend.scratch
        else:
            from hiapi.backends.numpy_backend.winograd_tiles import TRANSFORMS
            self.kernels = dict(zip(NAMES, winograd.winograd_kernels(TRANSFORMS)))
            self.scratch = dict(zip(NAMES, winograd.winograd_scratch(TRANSFORMS)))


IMPLEMENTATIONS = ["numpy-transforms", "numba"]


def direct(x, w, g, padding):
    """Forward, filter gradient and input gradient by direct convolution, in float64."""
    conv = dict(strides=(1, 1), padding=padding, dilation=(1, 1), groups=1)
    _, filter_grad, input_grad = im2col.conv_kernels(im2col.numpy_im2col, im2col.numpy_col2im,
                                                     im2col.numpy_lowering_bytes)
    x, w, g = (a.astype(np.float64) for a in (x, w, g))
    dw, dx = np.empty(w.shape), np.empty(x.shape)
    filter_grad(dw, x, g, (3, 3), **conv)
    input_grad(dx, g, w, x.shape[1:3], **conv)
    return conv_reference(x, w, (1, 1), padding, (1, 1)), dw, dx


def run(backend, x, w, g, padding, workspaces=None):
    conv = dict(strides=(1, 1), padding=padding, dilation=(1, 1), groups=1)
    spaces = workspaces or {}
    out, dw, dx = np.empty(g.shape, x.dtype), np.empty(w.shape, x.dtype), np.empty_like(x)
    backend.kernels["conv2d"](out, x, w, **conv, workspace=spaces.get("conv2d"))
    backend.kernels["conv2d_filter_grad"](dw, x, g, (3, 3), **conv,
                                          workspace=spaces.get("conv2d_filter_grad"))
    backend.kernels["conv2d_input_grad"](dx, g, w, x.shape[1:3], **conv,
                                         workspace=spaces.get("conv2d_input_grad"))
    return out, dw, dx


def operands(shape, dtype):
    n, h, w, c, f, padding = shape
    x = RNG.standard_normal((n, h, w, c)).astype(dtype)
    kernel = RNG.standard_normal((3, 3, c, f)).astype(dtype)
    oh, ow = (s if padding == "same" else s - 2 for s in (h, w))
    return x, kernel, RNG.standard_normal((n, oh, ow, f)).astype(dtype)


@pytest.mark.parametrize("backend", IMPLEMENTATIONS)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype, tolerance", [(np.float64, 1e-12), (np.float32, 1e-5)])
def test_matches_direct_convolution(backend, shape, dtype, tolerance, monkeypatch):
    monkeypatch.setattr(winograd, "PIECE_BYTES", 7 * 16 * 64 * 8)  # pieces straddle images
    chosen = Kernels(backend)
    x, w, g = operands(shape, dtype)
    for name, got, expected in zip(NAMES, run(chosen, x, w, g, shape[-1]),
                                   direct(x, w, g, shape[-1])):
        assert got.dtype == dtype
        error = np.abs(got - expected).max() / np.abs(expected).max()
        assert error < tolerance, f"{name}: relative error {error:.2e}"


def test_chosen_by_shape(monkeypatch):
    """On numba: 3x3, stride 1, undilated, ungrouped, >= MIN_CHANNELS channels in and out:
    Winograd (it transforms the kernel); otherwise, or with HIAPI_WINOGRAD=0, the im2col
    kernels. The numpy backend keeps im2col for every shape (measured faster there)."""
    chosen = Kernels("numba")
    from hiapi.backends.numpy_backend import backend as numpy_backend
    transformed = []
    real = winograd.kernel_transform
    monkeypatch.setattr(winograd, "kernel_transform",
                        lambda *args: transformed.append(1) or real(*args))
    x = RNG.standard_normal((2, 8, 8, 16))
    for kernel_shape, conv, expected in [
            ((3, 3, 16, 16), dict(strides=(1, 1), dilation=(1, 1), groups=1), 1),
            ((3, 3, 16, 3), dict(strides=(1, 1), dilation=(1, 1), groups=1), 0),
            ((3, 3, 16, 16), dict(strides=(2, 2), dilation=(1, 1), groups=1), 0),
            ((3, 3, 16, 16), dict(strides=(1, 1), dilation=(2, 2), groups=1), 0),
            ((3, 3, 8, 16), dict(strides=(1, 1), dilation=(1, 1), groups=2), 0),
            ((5, 5, 16, 16), dict(strides=(1, 1), dilation=(1, 1), groups=1), 0)]:
        w = RNG.standard_normal(kernel_shape)
        reference = conv_reference(x, w, conv["strides"], "same", conv["dilation"],
                                   conv["groups"])
        out = np.empty(reference.shape)
        transformed.clear()
        chosen.kernels["conv2d"](out, x, w, padding="same", **conv)
        assert len(transformed) == expected, (kernel_shape, conv)
        np.testing.assert_allclose(out, reference, rtol=1e-10, atol=1e-10)
    winograd_shape = dict(padding="same", strides=(1, 1), dilation=(1, 1), groups=1)
    transformed.clear()
    numpy_backend.kernels["conv2d"](out, x, RNG.standard_normal((3, 3, 16, 16)),
                                    **winograd_shape)
    assert not transformed
    monkeypatch.setenv("HIAPI_WINOGRAD", "0")               # off: im2col for every shape
    chosen.kernels["conv2d"](out, x, RNG.standard_normal((3, 3, 16, 16)), **winograd_shape)
    assert not transformed


@pytest.mark.parametrize("backend", IMPLEMENTATIONS)
def test_same_bits_on_one_and_two_threads_within_declared_scratch(backend, monkeypatch):
    """Pieces (and the filter gradient's lanes) depend on the shape only, so 1 and 2 threads
    give the same bits; each run fits the workspace its kernels declare for that thread
    count (``take`` raises when a piece does not fit)."""
    monkeypatch.setattr(winograd, "PIECE_BYTES", 20 * 16 * 40 * 4)
    chosen = Kernels(backend)
    shape = (6, 11, 10, 16, 24, "same")
    x, w, g = operands(shape, np.float32)
    shapes = {"conv2d": (g.shape, x.shape, w.shape),
              "conv2d_filter_grad": (w.shape, x.shape, g.shape),
              "conv2d_input_grad": (x.shape, g.shape, w.shape)}
    attrs = dict(strides=(1, 1), padding="same", dilation=(1, 1), groups=1, kernel_hw=(3, 3),
                 input_hw=x.shape[1:3])
    spread = []
    real_run = chunk_workers.workers.run

    def counting_run(tasks, job, count):
        spread.append(count)
        return real_run(tasks, job, count)
    monkeypatch.setattr(chunk_workers.workers, "run", counting_run)
    results = []
    for threads in (1, 2):
        monkeypatch.setattr(chunk_workers.threads, "active_threads", lambda n=threads: n)
        monkeypatch.setattr(winograd.threads, "num_threads", lambda n=threads: n)
        spaces = {name: np.empty(chosen.scratch[name](shapes[name], [x.dtype] * 3, attrs),
                                 np.uint8) for name in NAMES}
        results.append(run(chosen, x, w, g, "same", spaces))
    assert spread == [1, 1, 1, 2, 2, 2]
    for name, one, two in zip(NAMES, *results):
        np.testing.assert_array_equal(one, two, err_msg=name)


WINOGRAD_CONVS = [((5, 6), "valid"), ((5, 6), "same"), ((4, 3), "same")]


@pytest.fixture
def everywhere(monkeypatch):
    """Winograd for check_op's 4-channel shapes too, on the numba backend (the one that
    registers it)."""
    pytest.importorskip("numba", reason="the numba extra is not installed")
    monkeypatch.setattr(winograd, "MIN_CHANNELS", 1)
    previous = backends.get_backend()
    backends.set_backend("numba")
    yield
    backends.set_backend(previous.name)


@pytest.mark.parametrize("hw, padding", WINOGRAD_CONVS)
def test_finite_difference_gradients(hw, padding, everywhere):
    x = RNG.normal(size=(2,) + hw + (4,))
    w = RNG.normal(size=(3, 3, 4, 5))
    check_op(lambda a, b: ops.conv2d(a, b, (1, 1), padding, (1, 1), 1), [x, w],
             lambda a, b: conv_reference(a, b, (1, 1), padding, (1, 1)),
             batch=[True, False], double=True)


@pytest.mark.parametrize("hw, padding", WINOGRAD_CONVS[:2])
def test_gradient_ops_are_adjoints(hw, padding, everywhere):
    x = RNG.normal(size=(2,) + hw + (4,))
    w = RNG.normal(size=(3, 3, 4, 5))
    g = RNG.normal(size=conv_reference(x, w, (1, 1), padding, (1, 1)).shape)
    conv = dict(strides=(1, 1), padding=padding, dilation=(1, 1), groups=1)
    dx = check_op(lambda a, b: ops.conv2d_input_grad(a, b, hw, **conv), [g, w], double=True)
    dw = check_op(lambda a, b: ops.conv2d_filter_grad(a, b, (3, 3), **conv), [x, g],
                  double=True)
    forward = (conv_reference(x, w, (1, 1), padding, (1, 1)) * g).sum()
    assert (x * dx).sum() == pytest.approx(forward, rel=1e-10)
    assert (w * dw).sum() == pytest.approx(forward, rel=1e-10)
