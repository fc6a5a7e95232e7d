"""Convolution as GEMM: the three convolution ops lowered to one matrix product per group on
im2col columns, with the lowering (``im2col``/``col2im``) supplied by the backend.

Layout (NHWC): ``cols`` has one row per output position (N*OH*OW rows) and one column per
kernel tap and input channel (KH*KW*C columns, in the kernel's (kh, kw, c) order), so

    conv2d:             out(M, F)   = cols(M, K) @ w(K, F)
    conv2d_filter_grad: dw(K, F)    = cols(M, K).T @ g(M, F)     (BLAS reads the transpose)
    conv2d_input_grad:  dcols(M, K) = g(M, F) @ w(K, F).T, then col2im adds each window back

Every GEMM reads and writes contiguous 2-D buffers, and the columns live in the thread's
workspace (``hiapi.backends.workspace``), so a step allocates nothing. The numpy backend lowers
with strided copies; the numba backend registers the same kernels with parallel loops.
"""
from collections import namedtuple

import numpy as np
from numpy.lib.stride_tricks import as_strided

from hiapi.backends.workspace import scratch
from hiapi.graph.ops import conv_geometry as geo

Geometry = namedtuple("Geometry", "n h w c kh kw sh sw dh dw top left oh ow")


def geometry(input_shape, kernel_hw, out_hw, strides, padding, dilation, channels=None):
    n, h, w, c = input_shape
    (top, _), (left, _) = [geo.pads(size, k, s, d, padding) for size, k, s, d in
                           zip((h, w), kernel_hw, strides, dilation)]
    return Geometry(n, h, w, c if channels is None else channels, *kernel_hw, *strides,
                    *dilation, top, left, *out_hw)


def _slices(total, groups):
    size = total // groups
    return [slice(i * size, (i + 1) * size) for i in range(groups)]


def _rows(array):
    """``array`` as a 2-D (positions, channels) matrix, without a copy when it is contiguous."""
    return array.reshape(-1, array.shape[-1])


def _write(out, compute):
    """Run ``compute(target)`` into ``out``, through a temporary if ``out`` is not contiguous."""
    if out.flags.c_contiguous:
        compute(out)
    else:
        temporary = np.empty(out.shape, out.dtype)
        compute(temporary)
        out[...] = temporary


def conv_kernels(im2col, col2im):
    """The three convolution kernels, lowering with ``im2col(x, geometry, cols)`` and
    ``col2im(cols, geometry, out)`` (which adds into ``out``)."""

    def conv2d(out, x, w, strides, padding, dilation, groups):
        kernel_hw, cin, f = w.shape[:2], w.shape[2], w.shape[3]
        shape = geometry(x.shape, kernel_hw, out.shape[1:3], strides, padding, dilation, cin)
        for cs, fs in zip(_slices(x.shape[3], groups), _slices(f, groups)):
            cols = scratch((shape.n * shape.oh * shape.ow, shape.kh * shape.kw * cin), x.dtype)
            im2col(x if groups == 1 else x[..., cs], shape, cols)
            weights = w[..., fs].reshape(-1, f // groups)
            if groups == 1:
                _write(out, lambda target: np.matmul(cols, weights, out=_rows(target)))
            else:
                out[..., fs] = (cols @ weights).reshape(out[..., fs].shape)

    def conv2d_filter_grad(out, x, g, kernel_hw, strides, padding, dilation, groups):
        cin, f = out.shape[2], out.shape[3]
        shape = geometry(x.shape, kernel_hw, g.shape[1:3], strides, padding, dilation, cin)
        g_rows = _rows(np.ascontiguousarray(g))
        for cs, fs in zip(_slices(x.shape[3], groups), _slices(f, groups)):
            cols = scratch((shape.n * shape.oh * shape.ow, shape.kh * shape.kw * cin), x.dtype)
            im2col(x if groups == 1 else x[..., cs], shape, cols)
            if groups == 1:
                _write(out, lambda target: np.matmul(
                    cols.T, g_rows, out=target.reshape(-1, f)))
            else:
                out[..., fs] = (cols.T @ g_rows[:, fs]).reshape(out[..., fs].shape)

    def conv2d_input_grad(out, g, w, input_hw, strides, padding, dilation, groups):
        kernel_hw, cin, f = w.shape[:2], w.shape[2], w.shape[3]
        shape = geometry(out.shape, kernel_hw, g.shape[1:3], strides, padding, dilation, cin)
        g_rows = _rows(np.ascontiguousarray(g))
        out[...] = 0
        for cs, fs in zip(_slices(out.shape[3], groups), _slices(f, groups)):
            cols = scratch((shape.n * shape.oh * shape.ow, shape.kh * shape.kw * cin), out.dtype)
            np.matmul(g_rows[:, fs], w[..., fs].reshape(-1, f // groups).T, out=cols)
            col2im(cols, shape, out if groups == 1 else out[..., cs])

    return conv2d, conv2d_filter_grad, conv2d_input_grad


def windows(x, shape):
    """View (N, OH, OW, KH, KW, C) of the padded input ``x``: [n, i, j] is one window."""
    sn, sh, sw, sc = x.strides
    return as_strided(x, (shape.n, shape.oh, shape.ow, shape.kh, shape.kw, x.shape[3]),
                      (sn, sh * shape.sh, sw * shape.sw, sh * shape.dh, sw * shape.dw, sc),
                      writeable=False)


def _padded_extent(shape):
    return [(o - 1) * s + (k - 1) * d + 1 for o, s, k, d in
            ((shape.oh, shape.sh, shape.kh, shape.dh), (shape.ow, shape.sw, shape.kw, shape.dw))]


def numpy_im2col(x, shape, cols):
    """One strided copy of every window into ``cols`` (after zero padding, if any)."""
    height, width = _padded_extent(shape)
    if shape.top or shape.left or height > shape.h or width > shape.w:
        bottom, right = max(height - shape.h - shape.top, 0), max(width - shape.w - shape.left, 0)
        x = np.pad(x, ((0, 0), (shape.top, bottom), (shape.left, right), (0, 0)))
    np.copyto(cols.reshape(windows(x, shape).shape), windows(x, shape))


def numpy_col2im(cols, shape, out):
    """Add each window's column block back at its input position: one strided add per tap."""
    height, width = _padded_extent(shape)
    height, width = max(height, shape.top + shape.h), max(width, shape.left + shape.w)
    grid = np.zeros((shape.n, height, width, out.shape[3]), out.dtype)
    blocks = cols.reshape(shape.n, shape.oh, shape.ow, shape.kh, shape.kw, out.shape[3])
    for i in range(shape.kh):
        for j in range(shape.kw):
            h0, w0 = i * shape.dh, j * shape.dw
            grid[:, h0:h0 + shape.sh * shape.oh:shape.sh,
                 w0:w0 + shape.sw * shape.ow:shape.sw] += blocks[:, :, :, i, j]
    out += grid[:, shape.top:shape.top + shape.h, shape.left:shape.left + shape.w]
