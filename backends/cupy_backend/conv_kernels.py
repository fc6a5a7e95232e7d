"""Convolution and pooling kernels on NHWC device arrays, by im2col: a strided view of every
window (``cupy.lib.stride_tricks.as_strided``, no copy), gathered into one contiguous column
matrix and contracted with the kernel in one cuBLAS GEMM per group.

cuDNN is not used: cupy 14 removed its cuDNN bindings (``cupyx.cudnn``) and the pip wheels never
shipped cuDNN, so GEMM on im2col columns is the path every cupy install has. Pooling finds each
window's first maximum (row-major, as the numpy kernels do) with ``argmax`` and sends gradients
there with atomic adds (``cupyx.scatter_add``).
"""
import math

import cupy
import cupyx
from cupy.lib.stride_tricks import as_strided

from hiapi.backends.cupy_backend import backend
from hiapi.backends.numpy_backend.pool_kernels import avg_pool_kernels
from hiapi.graph.ops import conv_geometry as geo

register = backend.register


def padded(x, kernel_hw, strides, dilation, padding, value=0.0):
    (top, bottom), (left, right) = [geo.pads(size, k, s, d, padding) for size, k, s, d in
                                    zip(x.shape[1:3], kernel_hw, strides, dilation)]
    if top or bottom or left or right:
        x = cupy.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)), constant_values=value)
    return x, (top, left)


def windows(xp, kernel_hw, strides, dilation, out_hw):
    """View of shape (N, OH, OW, KH, KW, C) whose [n, i, j] is the window at output (i, j).
    Read-only by convention: windows overlap, so writing through the view would alias."""
    n, _, _, c = xp.shape
    sn, sh, sw, sc = xp.strides
    return as_strided(xp, (n,) + tuple(out_hw) + tuple(kernel_hw) + (c,),
                      (sn, sh * strides[0], sw * strides[1], sh * dilation[0],
                       sw * dilation[1], sc))


def _group_slices(total, groups):
    size = total // groups
    return [slice(i * size, (i + 1) * size) for i in range(groups)]


def _columns(cols):
    """The im2col matrix (N*OH*OW, KH*KW*C): one contiguous copy of the window view."""
    return cupy.ascontiguousarray(cols).reshape(-1, cols.shape[3] * cols.shape[4] * cols.shape[5])


def _matmul_into(out, a, b):
    """``out[...] = a @ b`` reshaped to ``out``; straight into ``out`` when it is contiguous."""
    if out.flags.c_contiguous:
        cupy.matmul(a, b, out=out.reshape(a.shape[0], b.shape[1]))
    else:
        out[...] = cupy.matmul(a, b).reshape(out.shape)


@register("conv2d")
def conv2d(out, x, w, strides, padding, dilation, groups):
    xp, _ = padded(x, w.shape[:2], strides, dilation, padding)
    cols = windows(xp, w.shape[:2], strides, dilation, out.shape[1:3])
    for cs, fs in zip(_group_slices(x.shape[3], groups), _group_slices(w.shape[3], groups)):
        wg = w[..., fs]
        _matmul_into(out[..., fs], _columns(cols[..., cs]), wg.reshape(-1, wg.shape[3]))


@register("conv2d_input_grad")
def conv2d_input_grad(out, g, w, input_hw, strides, padding, dilation, groups):
    kh, kw = w.shape[:2]
    (top, bottom), (left, right) = [geo.pads(size, k, s, d, padding) for size, k, s, d in
                                    zip(input_hw, (kh, kw), strides, dilation)]
    n, oh, ow, _ = g.shape
    grad_padded = cupy.zeros((n, input_hw[0] + top + bottom, input_hw[1] + left + right,
                              out.shape[3]), out.dtype)
    for cs, fs in zip(_group_slices(out.shape[3], groups), _group_slices(w.shape[3], groups)):
        wg, gg = w[..., fs], g[..., fs]
        # (N*OH*OW, F) x (F, KH*KW*Cg): every window's gradient, then added back window by tap
        cols = cupy.matmul(gg.reshape(-1, gg.shape[3]), wg.reshape(-1, wg.shape[3]).T)
        cols = cols.reshape(n, oh, ow, kh, kw, wg.shape[2])
        for i in range(kh):
            for j in range(kw):
                h0, w0 = i * dilation[0], j * dilation[1]
                grad_padded[:, h0:h0 + strides[0] * oh:strides[0],
                            w0:w0 + strides[1] * ow:strides[1], cs] += cols[:, :, :, i, j]
    out[...] = grad_padded[:, top:top + input_hw[0], left:left + input_hw[1]]


@register("conv2d_filter_grad")
def conv2d_filter_grad(out, x, g, kernel_hw, strides, padding, dilation, groups):
    xp, _ = padded(x, kernel_hw, strides, dilation, padding)
    cols = windows(xp, kernel_hw, strides, dilation, g.shape[1:3])
    for cs, fs in zip(_group_slices(x.shape[3], groups), _group_slices(g.shape[3], groups)):
        gg = g[..., fs]
        # cuBLAS reads the transposed columns in place (a transpose flag, no copy)
        _matmul_into(out[..., fs], _columns(cols[..., cs]).T, gg.reshape(-1, gg.shape[3]))


def _pool_windows(x, pool_size, strides, padding, value):
    xp, origin = padded(x, pool_size, strides, (1, 1), padding, value)
    out_hw = [geo.output_size(size, k, s, 1, padding) for size, k, s in
              zip(x.shape[1:3], pool_size, strides)]
    return windows(xp, pool_size, strides, (1, 1), out_hw), xp.shape, origin


def _argmax_positions(x, pool_size, strides, padding):
    """Flat indices into the padded input of each window's first maximum, and padded shape."""
    cols, padded_shape, origin = _pool_windows(x, pool_size, strides, padding, -cupy.inf)
    n, oh, ow, kh, kw, c = cols.shape
    flat = cols.transpose(0, 1, 2, 5, 3, 4).reshape(n, oh, ow, c, kh * kw)
    di, dj = cupy.divmod(flat.argmax(axis=-1), kw)
    rows = cupy.arange(oh)[None, :, None, None] * strides[0] + di
    columns = cupy.arange(ow)[None, None, :, None] * strides[1] + dj
    index = ((cupy.arange(n)[:, None, None, None] * padded_shape[1] + rows) * padded_shape[2]
             + columns) * c + cupy.arange(c)
    return index, padded_shape, origin


def _crop(padded_flat, padded_shape, origin, hw):
    grid = padded_flat.reshape(padded_shape)
    return grid[:, origin[0]:origin[0] + hw[0], origin[1]:origin[1] + hw[1]]


@register("max_pool2d")
def max_pool2d(out, x, pool_size, strides, padding):
    cols, _, _ = _pool_windows(x, pool_size, strides, padding, -cupy.inf)
    cupy.amax(cols, axis=(3, 4), out=out)


@register("max_pool_scatter")
def max_pool_scatter(out, x, g, pool_size, strides, padding):
    index, padded_shape, origin = _argmax_positions(x, pool_size, strides, padding)
    total = cupy.zeros(math.prod(padded_shape), out.dtype)
    cupyx.scatter_add(total, index, g)
    out[...] = _crop(total, padded_shape, origin, x.shape[1:3])


@register("max_pool_gather")
def max_pool_gather(out, x, u, pool_size, strides, padding):
    index, padded_shape, origin = _argmax_positions(x, pool_size, strides, padding)
    (top, bottom), (left, right) = [(o, p - o - s) for o, p, s in
                                    zip(origin, padded_shape[1:3], x.shape[1:3])]
    up = cupy.pad(u, ((0, 0), (top, bottom), (left, right), (0, 0)))
    out[...] = up.reshape(-1)[index]


_avg_pool2d, _avg_pool2d_grad = avg_pool_kernels(cupy, _pool_windows)
register("avg_pool2d")(_avg_pool2d)
register("avg_pool2d_grad")(_avg_pool2d_grad)
