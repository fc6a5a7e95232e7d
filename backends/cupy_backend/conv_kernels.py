"""Convolution and pooling kernels on NHWC device arrays, by im2col: a strided view of every
window (``cupy.lib.stride_tricks.as_strided``, no copy), gathered into one contiguous column
matrix and contracted with the kernel in one cuBLAS GEMM per group.

cuDNN is not used: cupy 14 removed its cuDNN bindings (``cupyx.cudnn``) and the pip wheels never
shipped cuDNN, so GEMM on im2col columns is the path every cupy install has. Pooling finds each
window's first maximum (row-major, as the numpy kernels do) and sends gradients there with
atomic adds: one ``ElementwiseKernel`` thread per window for float32 and float64, ``argmax`` and
``cupyx.scatter_add`` for the other dtypes.

The convolutions' temporaries (the zero-padded input, the column matrix, the input gradient's
padded grid) are declared per shape (``conv_scratch``) and live in the kernel's planned
workspace, a block of the executor's arena (``hiapi.backends.workspace``), so cupy's memory
pool holds nothing for them beyond the plan: the same path as the CPU backends.
"""
import math

import cupy
import cupyx
from cupy.lib.stride_tricks import as_strided

from hiapi.backends.cupy_backend import cublas_products
from hiapi.backends.cupy_backend.registry import backend
from hiapi.backends.numpy_backend.pool_kernels import avg_pool_kernels
from hiapi.backends.workspace import aligned, take
from hiapi.backends import conv_geometry as geo

register = backend.register


def _pads(hw, kernel_hw, strides, dilation, padding):
    return [geo.pads(size, k, s, d, padding) for size, k, s, d in
            zip(hw, kernel_hw, strides, dilation)]


def padded(x, kernel_hw, strides, dilation, padding, value=0.0, workspace=None):
    """``x`` with its padding (into ``workspace`` when given; the input when none is due)."""
    (top, bottom), (left, right) = _pads(x.shape[1:3], kernel_hw, strides, dilation, padding)
    if top or bottom or left or right:
        if workspace is None:
            return cupy.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)),
                            constant_values=value), (top, left)
        n, h, w, c = x.shape
        grid = take(workspace, (n, h + top + bottom, w + left + right, c), x.dtype, xp=cupy)
        grid.fill(value)
        grid[:, top:top + h, left:left + w] = x
        x = grid
    return x, (top, left)


def _padded_bytes(shape, kernel_hw, strides, dilation, padding, itemsize):
    (top, bottom), (left, right) = _pads(shape[1:3], kernel_hw, strides, dilation, padding)
    if not (top or bottom or left or right):
        return 0
    return shape[0] * (shape[1] + top + bottom) * (shape[2] + left + right) * shape[3] * itemsize


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


def _columns(cols, workspace=None, offset=0):
    """The im2col matrix (N*OH*OW, KH*KW*C): one contiguous copy of the window view."""
    matrix = take(workspace, cols.shape, cols.dtype, offset, xp=cupy)
    matrix[...] = cols
    return matrix.reshape(-1, cols.shape[3] * cols.shape[4] * cols.shape[5])


def _columns_bytes(n, out_hw, kernel_hw, channels, itemsize):
    return n * math.prod(out_hw) * math.prod(kernel_hw) * channels * itemsize


def _forward_scratch(x, kernel_hw, out_hw, cin, attrs, itemsize):
    """Padded input, then one group's columns (conv2d and its filter gradient)."""
    pad = aligned(_padded_bytes(x, kernel_hw, attrs["strides"], attrs["dilation"],
                                attrs["padding"], itemsize))
    return pad, pad + _columns_bytes(x[0], out_hw, kernel_hw, cin, itemsize)


def conv2d_scratch(shapes, dtypes, attrs):
    out, x, w = shapes
    return _forward_scratch(x, w[:2], out[1:3], w[2], attrs, dtypes[0].itemsize)[1]


def conv2d_filter_grad_scratch(shapes, dtypes, attrs):
    out, x, g = shapes
    return _forward_scratch(x, attrs["kernel_hw"], g[1:3], out[2], attrs,
                            dtypes[0].itemsize)[1]


def _input_grad_scratch(out, g, w, attrs, itemsize):
    """The padded gradient grid, then one group's window gradients."""
    (top, bottom), (left, right) = _pads(attrs["input_hw"], w[:2], attrs["strides"],
                                         attrs["dilation"], attrs["padding"])
    grid = (out[0], attrs["input_hw"][0] + top + bottom, attrs["input_hw"][1] + left + right,
            out[3])
    start = aligned(math.prod(grid) * itemsize)
    return grid, start, start + _columns_bytes(g[0], g[1:3], w[:2], w[2], itemsize)


def conv2d_input_grad_scratch(shapes, dtypes, attrs):
    out, g, w = shapes
    return _input_grad_scratch(out, g, w, attrs, dtypes[0].itemsize)[2]


def _matmul_into(out, a, b):
    """``out[...] = a @ b`` reshaped to ``out``; straight into ``out`` when it is contiguous."""
    if out.flags.c_contiguous:
        cublas_products.matmul(a, b, out.reshape(a.shape[0], b.shape[1]))
    else:
        out[...] = cublas_products.product(a, b).reshape(out.shape)


@register("conv2d", scratch=conv2d_scratch)
def conv2d(out, x, w, strides, padding, dilation, groups, workspace=None):
    attrs = {"strides": strides, "dilation": dilation, "padding": padding}
    start, _ = _forward_scratch(x.shape, w.shape[:2], out.shape[1:3], w.shape[2], attrs,
                                x.dtype.itemsize)
    xp, _ = padded(x, w.shape[:2], strides, dilation, padding, workspace=workspace)
    cols = windows(xp, w.shape[:2], strides, dilation, out.shape[1:3])
    for cs, fs in zip(_group_slices(x.shape[3], groups), _group_slices(w.shape[3], groups)):
        wg = w[..., fs]
        _matmul_into(out[..., fs], _columns(cols[..., cs], workspace, start),
                     wg.reshape(-1, wg.shape[3]))


@register("conv2d_input_grad", scratch=conv2d_input_grad_scratch)
def conv2d_input_grad(out, g, w, input_hw, strides, padding, dilation, groups,
                      workspace=None):
    kh, kw = w.shape[:2]
    (top, bottom), (left, right) = _pads(input_hw, (kh, kw), strides, dilation, padding)
    n, oh, ow, _ = g.shape
    attrs = {"input_hw": input_hw, "strides": strides, "dilation": dilation, "padding": padding}
    grid, start, _ = _input_grad_scratch(out.shape, g.shape, w.shape, attrs, out.dtype.itemsize)
    grad_padded = take(workspace, grid, out.dtype, xp=cupy)
    if out.dtype not in (cupy.float32, cupy.float64):
        grad_padded.fill(0)
    for cs, fs in zip(_group_slices(out.shape[3], groups), _group_slices(w.shape[3], groups)):
        wg, gg = w[..., fs], g[..., fs]
        # (N*OH*OW, F) x (F, KH*KW*Cg): every window's gradient, then added back window by tap
        cols = take(workspace, (n * oh * ow, kh * kw * wg.shape[2]), out.dtype, start, xp=cupy)
        cublas_products.matmul(gg.reshape(-1, gg.shape[3]), wg.reshape(-1, wg.shape[3]).T,
                               cols)
        if out.dtype in (cupy.float32, cupy.float64):
            _COL2IM(cols, out.shape[1], out.shape[2], wg.shape[2], oh, ow, kh, kw, strides[0],
                    strides[1], dilation[0], dilation[1], top, left, out[..., cs])
            continue
        cols = cols.reshape(n, oh, ow, kh, kw, wg.shape[2])
        for i in range(kh):
            for j in range(kw):
                h0, w0 = i * dilation[0], j * dilation[1]
                grad_padded[:, h0:h0 + strides[0] * oh:strides[0],
                            w0:w0 + strides[1] * ow:strides[1], cs] += cols[:, :, :, i, j]
    if out.dtype not in (cupy.float32, cupy.float64):
        out[...] = grad_padded[:, top:top + input_hw[0], left:left + input_hw[1]]


# col2im in one pass: a thread per input-gradient element adds the window gradients of every
# tap that read it, taps in row-major order from zero, as the strided adds above do (the same
# float sums); no padded grid, no atomics. ``cols`` is (N*OH*OW, KH*KW*C) of one group.
_COL2IM = cupy.ElementwiseKernel(
    "raw T cols, int64 h, int64 w, int64 c, int64 oh, int64 ow, int64 kh, int64 kw, "
    "int64 sh, int64 sw, int64 dh, int64 dw, int64 top, int64 left", "T out",
    """
    const long long ch = i % c;
    long long rest = i / c;
    const long long px = rest % w + left;
    rest /= w;
    const long long py = rest % h + top;
    const long long n = rest / h;
    T total = 0;
    for (long long a = 0; a < kh; a++) {
        const long long r = py - a * dh;
        if (r < 0 || r % sh != 0 || r / sh >= oh) continue;
        const long long oy = r / sh;
        for (long long b = 0; b < kw; b++) {
            const long long q = px - b * dw;
            if (q < 0 || q % sw != 0 || q / sw >= ow) continue;
            const long long ox = q / sw;
            total += cols[((((n * oh + oy) * ow + ox) * kh + a) * kw + b) * c + ch];
        }
    }
    out = total;
    """, "hiapi_col2im")


@register("conv2d_filter_grad", scratch=conv2d_filter_grad_scratch)
def conv2d_filter_grad(out, x, g, kernel_hw, strides, padding, dilation, groups,
                       workspace=None):
    attrs = {"strides": strides, "dilation": dilation, "padding": padding}
    start, _ = _forward_scratch(x.shape, kernel_hw, g.shape[1:3], out.shape[2], attrs,
                                x.dtype.itemsize)
    xp, _ = padded(x, kernel_hw, strides, dilation, padding, workspace=workspace)
    cols = windows(xp, kernel_hw, strides, dilation, g.shape[1:3])
    for cs, fs in zip(_group_slices(x.shape[3], groups), _group_slices(g.shape[3], groups)):
        gg = g[..., fs]
        # cuBLAS reads the transposed columns in place (a transpose flag, no copy)
        _matmul_into(out[..., fs], _columns(cols[..., cs], workspace, start).T,
                     gg.reshape(-1, gg.shape[3]))


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


# One thread per pooling window: it finds the window's first maximum in row-major order (as
# the numpy kernels' argmax does; padding never wins) and adds the window's gradient there.
# Windows that overlap may add to one position, hence the atomic add.
_MAX_POOL_GRAD = cupy.ElementwiseKernel(
    "T g, raw T x, int64 h, int64 w, int64 c, int64 oh, int64 ow, int64 kh, int64 kw, "
    "int64 sh, int64 sw, int64 top, int64 left", "raw T out",
    """
    const long long ch = i % c;
    long long rest = i / c;
    const long long ox = rest % ow;
    rest /= ow;
    const long long oy = rest % oh;
    const long long n = rest / oh;
    long long best = -1;
    T best_value = 0;
    for (long long a = 0; a < kh; a++) {
        const long long y = oy * sh + a - top;
        if (y < 0 || y >= h) continue;
        for (long long b = 0; b < kw; b++) {
            const long long xx = ox * sw + b - left;
            if (xx < 0 || xx >= w) continue;
            const long long at = ((n * h + y) * w + xx) * c + ch;
            const T v = x[at];
            if (best < 0 || v > best_value) { best = at; best_value = v; }
        }
    }
    if (best >= 0) atomicAdd(&out[best], g);
    """, "hiapi_max_pool_grad")


@register("max_pool_scatter")
def max_pool_scatter(out, x, g, pool_size, strides, padding):
    if x.dtype in (cupy.float32, cupy.float64) and out.flags.c_contiguous:
        (top, _), (left, _) = _pads(x.shape[1:3], pool_size, strides, (1, 1), padding)
        out.fill(0)
        n, h, w, c = x.shape
        _MAX_POOL_GRAD(g, cupy.ascontiguousarray(x), h, w, c, g.shape[1], g.shape[2],
                       pool_size[0], pool_size[1], strides[0], strides[1], top, left, out)
        return
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
