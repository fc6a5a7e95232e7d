"""Pooling kernels on NHWC arrays, over a strided *view* of every window (no copy); windows
that neither overlap nor need padding take a faster reshape path."""
import numpy as np

from hiapi.backends.numpy_backend.registry import backend
from hiapi.backends.workspace import aligned, take
from hiapi.backends.numpy_backend.im2col import geometry, windows
from hiapi.backends import conv_geometry as geo

register = backend.register


def padded(x, kernel_hw, strides, dilation, padding, value=0.0):
    (top, bottom), (left, right) = [geo.pads(size, k, s, d, padding) for size, k, s, d in
                                    zip(x.shape[1:3], kernel_hw, strides, dilation)]
    if top or bottom or left or right:
        x = np.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)), constant_values=value)
    return x, (top, left)


def _pool_windows(x, pool_size, strides, padding, value):
    xp, origin = padded(x, pool_size, strides, (1, 1), padding, value)
    out_hw = [geo.output_size(size, k, s, 1, padding) for size, k, s in
              zip(x.shape[1:3], pool_size, strides)]
    shape = geometry(x.shape, pool_size, out_hw, strides, padding, (1, 1))
    return windows(xp, shape), xp.shape, origin


def _argmax_positions(x, pool_size, strides, padding):
    """Flat indices into the padded input of each window's first maximum, and padded shape."""
    cols, padded_shape, origin = _pool_windows(x, pool_size, strides, padding, -np.inf)
    n, oh, ow, kh, kw, c = cols.shape
    flat = cols.transpose(0, 1, 2, 5, 3, 4).reshape(n, oh, ow, c, kh * kw)
    best = flat.argmax(axis=-1)
    di, dj = np.divmod(best, kw)
    rows = np.arange(oh)[None, :, None, None] * strides[0] + di
    cols_ = np.arange(ow)[None, None, :, None] * strides[1] + dj
    index = ((np.arange(n)[:, None, None, None] * padded_shape[1] + rows) * padded_shape[2]
             + cols_) * c + np.arange(c)
    return index, padded_shape, origin


def _crop(padded_flat, padded_shape, origin, hw):
    grid = padded_flat.reshape(padded_shape)
    return grid[:, origin[0]:origin[0] + hw[0], origin[1]:origin[1] + hw[1]]


@register("max_pool2d")
def max_pool2d(out, x, pool_size, strides, padding):
    cols, _, _ = _pool_windows(x, pool_size, strides, padding, -np.inf)
    np.max(cols, axis=(3, 4), out=out)


def _tiles(a, pool_size, out_hw):
    """Non-overlapping windows of ``a`` as (N, OH, OW, C, ph*pw): a copy, in window order."""
    (ph, pw), (oh, ow) = pool_size, out_hw
    n, c = a.shape[0], a.shape[3]
    cropped = a[:, :oh * ph, :ow * pw]
    return cropped.reshape(n, oh, ph, ow, pw, c).transpose(0, 1, 3, 5, 2, 4).reshape(
        n, oh, ow, c, ph * pw)


def _tiled(pool_size, strides, padding):
    """Windows that neither overlap nor need padding: the fast path."""
    return tuple(pool_size) == tuple(strides) and padding == "valid"


def _scatter_scratch(shapes, dtypes, attrs):
    """Workspace of the tiled gradient: the windows in window order, each window's argmax and
    one tap's mask (the other paths allocate their own)."""
    if not _tiled(attrs["pool_size"], attrs["strides"], attrs["padding"]):
        return 0
    (n, oh, ow, c), (ph, pw) = shapes[2], attrs["pool_size"]
    windows_bytes = n * oh * ow * c * ph * pw * dtypes[1].itemsize
    return aligned(windows_bytes) + aligned(n * oh * ow * c * np.dtype(np.intp).itemsize) + \
        n * oh * ow * c


@register("max_pool_scatter", scratch=_scatter_scratch)
def max_pool_scatter(out, x, g, pool_size, strides, padding, workspace=None):
    if _tiled(pool_size, strides, padding):
        (ph, pw), (n, oh, ow, c) = pool_size, g.shape
        tiles = take(workspace, (n, oh, ow, c, ph * pw), x.dtype)
        np.copyto(tiles.reshape(n, oh, ow, c, ph, pw),
                  x[:, :oh * ph, :ow * pw].reshape(n, oh, ph, ow, pw, c).transpose(
                      0, 1, 3, 5, 2, 4))
        at = aligned(tiles.nbytes)
        first_max = take(workspace, (n, oh, ow, c), np.intp, at)
        np.argmax(tiles, axis=-1, out=first_max)
        hit = take(workspace, (n, oh, ow, c), np.bool_, at + aligned(first_max.nbytes))
        out[...] = 0
        for k in range(ph * pw):            # each tap gets the gradient where it is the max
            i, j = divmod(k, pw)
            np.equal(first_max, k, out=hit)
            np.multiply(g, hit, out=out[:, i:oh * ph:ph, j:ow * pw:pw])
        return
    index, padded_shape, origin = _argmax_positions(x, pool_size, strides, padding)
    total = np.bincount(index.ravel(), weights=g.ravel(), minlength=int(np.prod(padded_shape)))
    out[...] = _crop(total, padded_shape, origin, x.shape[1:3])


@register("max_pool_gather")
def max_pool_gather(out, x, u, pool_size, strides, padding):
    if _tiled(pool_size, strides, padding):
        first_max = _tiles(x, pool_size, out.shape[1:3]).argmax(axis=-1)[..., None]
        out[...] = np.take_along_axis(_tiles(u, pool_size, out.shape[1:3]), first_max, -1)[..., 0]
        return
    index, padded_shape, origin = _argmax_positions(x, pool_size, strides, padding)
    (top, bottom), (left, right) = [(o, p - o - s) for o, p, s in
                                    zip(origin, padded_shape[1:3], x.shape[1:3])]
    up = np.pad(u, ((0, 0), (top, bottom), (left, right), (0, 0)))
    out[...] = up.ravel()[index]


def avg_pool_kernels(xp, pool_windows):
    """``avg_pool2d`` and its gradient for the array module ``xp`` (numpy or cupy), given that
    module's ``pool_windows(x, pool_size, strides, padding, pad_value)`` -> (window view, ...)."""

    def window_counts(hw, pool_size, strides, padding, dtype):
        """How many real (unpadded) elements each output window covers: (OH, OW, 1)."""
        ones = xp.ones((1,) + tuple(hw) + (1,), dtype)
        cols = pool_windows(ones, pool_size, strides, padding, 0.0)[0]
        return cols.sum(axis=(3, 4))[0]

    def avg_pool2d(out, x, pool_size, strides, padding):
        cols = pool_windows(x, pool_size, strides, padding, 0.0)[0]
        xp.sum(cols, axis=(3, 4), out=out)
        out /= window_counts(x.shape[1:3], pool_size, strides, padding, out.dtype)

    def avg_pool2d_grad(out, g, input_hw, pool_size, strides, padding):
        share = g / window_counts(input_hw, pool_size, strides, padding, g.dtype)
        n, oh, ow, c = g.shape
        (top, bottom), (left, right) = [geo.pads(size, k, s, 1, padding) for size, k, s in
                                        zip(input_hw, pool_size, strides)]
        grad_padded = xp.zeros((n, input_hw[0] + top + bottom, input_hw[1] + left + right, c),
                               g.dtype)
        for i in range(pool_size[0]):
            for j in range(pool_size[1]):
                grad_padded[:, i:i + strides[0] * oh:strides[0],
                            j:j + strides[1] * ow:strides[1]] += share
        out[...] = grad_padded[:, top:top + input_hw[0], left:left + input_hw[1]]

    return avg_pool2d, avg_pool2d_grad


_avg_pool2d, _avg_pool2d_grad = avg_pool_kernels(np, _pool_windows)
register("avg_pool2d")(_avg_pool2d)
register("avg_pool2d_grad")(_avg_pool2d_grad)
