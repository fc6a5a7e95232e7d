"""Convolution as GEMM: the three convolution ops lowered to one matrix product per group on
im2col columns, with the lowering (``im2col``/``col2im``) supplied by the backend.

Layout (NHWC): ``cols`` has one row per output position (N*OH*OW rows) and one column per
kernel tap and input channel (KH*KW*C columns, in the kernel's (kh, kw, c) order), so

    conv2d:             out(M, F)   = cols(M, K) @ w(K, F)
    conv2d_filter_grad: dw(K, F)    = cols(M, K).T @ g(M, F)     (BLAS reads the transpose)
    conv2d_input_grad:  dcols(M, K) = g(M, F) @ w(K, F).T, then col2im adds each window back

Every GEMM reads and writes contiguous 2-D buffers; the columns are made a few images at a
time (``CHUNK_BYTES``) in the thread's workspace (``hiapi.backends.workspace``), so they stay in
cache and a step allocates nothing. The numpy backend lowers
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


# Columns are built and consumed a few images at a time: a chunk of about this many bytes is
# still in cache when the GEMM reads it (or when col2im reads the GEMM's output), where the
# columns of a whole batch (66 MB for a 32x32x32 layer at batch 64) make a round trip through
# memory. Measured on 2 cores, CIFAR-style 3x3 layer: 21 -> 11 ms forward, 19 -> 11 ms input
# gradient; 2-16 MB chunks were within 10 % of each other.
CHUNK_BYTES = 4 << 20


def _chunks(shape, columns, itemsize):
    """(images, geometry of that many images) covering the batch in cache-sized pieces."""
    per = max(1, CHUNK_BYTES // max(shape.oh * shape.ow * columns * itemsize, 1))
    for start in range(0, shape.n, per):
        stop = min(start + per, shape.n)
        yield slice(start, stop), shape._replace(n=stop - start)


def _gemm_into(out, a, b):
    """``out[...] = a @ b`` (``out`` viewed as a matrix), straight into ``out`` when it is
    contiguous."""
    if out.flags.c_contiguous:
        np.matmul(a, b, out=out.reshape(a.shape[0], b.shape[1]))
    else:
        out[...] = (a @ b).reshape(out.shape)


def conv_kernels(im2col, col2im):
    """The three convolution kernels, lowering with ``im2col(x, geometry, cols)`` and
    ``col2im(cols, geometry, out)`` (which adds into ``out``)."""

    def conv2d(out, x, w, strides, padding, dilation, groups):
        kernel_hw, cin, f = w.shape[:2], w.shape[2], w.shape[3]
        shape = geometry(x.shape, kernel_hw, out.shape[1:3], strides, padding, dilation, cin)
        k = shape.kh * shape.kw * cin
        for cs, fs in zip(_slices(x.shape[3], groups), _slices(f, groups)):
            weights = w[..., fs].reshape(k, f // groups)
            for images, part in _chunks(shape, k, x.itemsize):
                cols = scratch((part.n * part.oh * part.ow, k), x.dtype)
                im2col(x[images, ..., cs], part, cols)      # contiguous when groups == 1
                _gemm_into(out[images, ..., fs], cols, weights)

    def conv2d_filter_grad(out, x, g, kernel_hw, strides, padding, dilation, groups):
        cin, f = out.shape[2], out.shape[3]
        shape = geometry(x.shape, kernel_hw, g.shape[1:3], strides, padding, dilation, cin)
        k = shape.kh * shape.kw * cin
        g = np.ascontiguousarray(g)
        for cs, fs in zip(_slices(x.shape[3], groups), _slices(f, groups)):
            target = out[..., fs]
            for images, part in _chunks(shape, k, x.itemsize):
                cols = scratch((part.n * part.oh * part.ow, k), x.dtype)
                im2col(x[images, ..., cs], part, cols)
                g_rows = g[images].reshape(-1, f)[:, fs]
                if images.start == 0:
                    _gemm_into(target, cols.T, g_rows)
                else:
                    target += (cols.T @ g_rows).reshape(target.shape)

    def conv2d_input_grad(out, g, w, input_hw, strides, padding, dilation, groups):
        kernel_hw, cin, f = w.shape[:2], w.shape[2], w.shape[3]
        shape = geometry(out.shape, kernel_hw, g.shape[1:3], strides, padding, dilation, cin)
        k = shape.kh * shape.kw * cin
        g = np.ascontiguousarray(g)
        out[...] = 0
        for cs, fs in zip(_slices(out.shape[3], groups), _slices(f, groups)):
            weights_t = w[..., fs].reshape(k, f // groups).T
            for images, part in _chunks(shape, k, out.itemsize):
                cols = scratch((part.n * part.oh * part.ow, k), out.dtype)
                np.matmul(g[images].reshape(-1, f)[:, fs], weights_t, out=cols)
                col2im(cols, part, out[images, ..., cs])

    return conv2d, conv2d_filter_grad, conv2d_input_grad


def register_conv_kernels(backend, im2col, col2im):
    """Register the three convolution kernels, lowered by ``im2col``/``col2im``."""
    for name, kernel in zip(("conv2d", "conv2d_filter_grad", "conv2d_input_grad"),
                            conv_kernels(im2col, col2im)):
        backend.register(name)(kernel)


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
    view = windows(x, shape)
    np.copyto(cols.reshape(view.shape), view)


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
