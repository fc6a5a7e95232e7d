"""``image_transform`` and its adjoint as numba loops: one pass per output row reading (or, for
the adjoint, adding to) each pixel's 1 or 4 neighbours, instead of the numpy kernel's
whole-batch index and weight arrays. The source points come from the shared kernel's
``source_points`` (so ties round the same way) and the fill-mode folding and rounding (half away
from zero) are the same, so both agree to float rounding. The forward is parallel over
(image, row); the adjoint over images, since rows of one image may add to the same input pixel.
"""
import numpy as np
from numba import njit, prange

from hiapi.backends.image_kernels import source_points
from hiapi.backends.numba_backend.registry import backend

_MODES = {"constant": 0, "nearest": 1, "wrap": 2, "mirror": 3, "reflect": 4}


@njit(cache=True, inline="always")
def _mirror(i, size):
    if size == 1:
        return 0
    span = size - 1
    return abs((i + span) % (2 * span) - span)


@njit(cache=True, inline="always")
def _fold(i, size, mode):
    if 0 <= i < size or mode == 0:
        return i
    if mode == 1:
        return min(max(i, 0), size - 1)
    if mode == 2:
        return i % size
    if mode == 3:
        return _mirror(i, size)
    return (_mirror(2 * i + 1, 2 * size + 1) - 1) // 2


@njit(cache=True, inline="always")
def _taps(y, x, bilinear, h, w, mode, rows, cols, weights):
    """Fill up to 4 neighbours (row, col, weight); row -1 marks one outside (constant)."""
    if not bilinear:
        count = 1
        ys, xs = np.sign(y) * np.floor(abs(y) + 0.5), np.sign(x) * np.floor(abs(x) + 0.5)
        rows[0], cols[0], weights[0] = int(ys), int(xs), 1.0
    else:
        count = 4
        y0, x0 = np.floor(y), np.floor(x)
        dy, dx = y - y0, x - x0
        for a in range(2):
            for b in range(2):
                rows[2 * a + b], cols[2 * a + b] = int(y0) + a, int(x0) + b
                weights[2 * a + b] = (dy if a else 1.0 - dy) * (dx if b else 1.0 - dx)
    for i in range(count):
        r, c = _fold(rows[i], h, mode), _fold(cols[i], w, mode)
        rows[i], cols[i] = (r, c) if 0 <= r < h and 0 <= c < w else (-1, -1)
    return count


@njit(parallel=True, cache=True)
def _transform(out, images, ys, xs, bilinear, mode, fill):
    n, h, w, channels = images.shape
    oh, ow = out.shape[1], out.shape[2]
    for p in prange(n * oh):
        b, r = p // oh, p % oh
        rows, cols = np.empty(4, np.int64), np.empty(4, np.int64)
        weights = np.empty(4, np.float64)
        for col in range(ow):
            count = _taps(np.float64(ys[b, r, col]), np.float64(xs[b, r, col]), bilinear, h,
                          w, mode, rows, cols, weights)
            for c in range(channels):
                out[b, r, col, c] = 0
            for i in range(count):
                if rows[i] >= 0:
                    for c in range(channels):
                        out[b, r, col, c] += weights[i] * images[b, rows[i], cols[i], c]
                elif fill != 0:
                    for c in range(channels):
                        out[b, r, col, c] += weights[i] * fill


@njit(parallel=True, cache=True)
def _transform_grad(out, g, ys, xs, bilinear, mode):
    n, h, w, channels = out.shape
    oh, ow = g.shape[1], g.shape[2]
    for b in prange(n):
        rows, cols = np.empty(4, np.int64), np.empty(4, np.int64)
        weights = np.empty(4, np.float64)
        out[b] = 0
        for r in range(oh):
            for col in range(ow):
                count = _taps(np.float64(ys[b, r, col]), np.float64(xs[b, r, col]), bilinear,
                              h, w, mode, rows, cols, weights)
                for i in range(count):
                    if rows[i] >= 0:
                        for c in range(channels):
                            out[b, rows[i], cols[i], c] += weights[i] * g[b, r, col, c]


@backend.register("image_transform")
def image_transform(out, images, transforms, output_hw, interpolation, fill_mode, fill_value):
    ys, xs = source_points(np, transforms, len(images), output_hw, out.dtype)
    _transform(out, images, ys, xs, interpolation == "bilinear", _MODES[fill_mode],
               float(fill_value))


@backend.register("image_transform_grad")
def image_transform_grad(out, g, transforms, input_hw, interpolation, fill_mode):
    ys, xs = source_points(np, transforms, len(g), g.shape[1:3], out.dtype)
    _transform_grad(out, g, ys, xs, interpolation == "bilinear", _MODES[fill_mode])
