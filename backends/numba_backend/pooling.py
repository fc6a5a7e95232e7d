"""Max pooling and its two gradient ops as numba loops (parallel over the batch).

Each window's first maximum in row-major order is found once per channel, in the same order as
the numpy kernels, so the three ops agree with them exactly; padded positions are skipped (the
numpy kernels pad with -inf, which never wins either).
"""
import numpy as np
from numba import njit, prange

from hiapi.backends.numba_backend import backend
from hiapi.graph.ops import conv_geometry as geo


@njit(parallel=True, cache=True)
def _max_pool(x, out_hw, pool, strides, origin, g, out, mode):
    """mode 0: out = window max; 1: out (x-shaped) += g at the argmax; 2: out = g at argmax."""
    n_batch, height, width, channels = x.shape
    for n in prange(n_batch):
        best = np.empty(channels, x.dtype)
        rows = np.empty(channels, np.int64)
        cols = np.empty(channels, np.int64)
        for i in range(out_hw[0]):
            for j in range(out_hw[1]):
                best[:] = -np.inf
                rows[:] = -1
                for a in range(pool[0]):
                    r = i * strides[0] - origin[0] + a
                    if r < 0 or r >= height:
                        continue
                    for b in range(pool[1]):
                        q = j * strides[1] - origin[1] + b
                        if q < 0 or q >= width:
                            continue
                        for c in range(channels):
                            v = x[n, r, q, c]
                            if v > best[c] or rows[c] < 0:
                                best[c] = v
                                rows[c] = r
                                cols[c] = q
                for c in range(channels):
                    if mode == 0:
                        out[n, i, j, c] = best[c]
                    elif mode == 1:
                        out[n, rows[c], cols[c], c] += g[n, i, j, c]
                    else:
                        out[n, i, j, c] = g[n, rows[c], cols[c], c]


def _geometry(x, pool_size, strides, padding):
    out_hw = tuple(geo.output_size(s, k, st, 1, padding) for s, k, st in
                   zip(x.shape[1:3], pool_size, strides))
    origin = tuple(geo.pads(s, k, st, 1, padding)[0] for s, k, st in
                   zip(x.shape[1:3], pool_size, strides))
    return np.array(out_hw), np.array(pool_size), np.array(strides), np.array(origin)


@backend.register("max_pool2d")
def max_pool2d(out, x, pool_size, strides, padding):
    _max_pool(x, *_geometry(x, pool_size, strides, padding), out, out, 0)


@backend.register("max_pool_scatter")
def max_pool_scatter(out, x, g, pool_size, strides, padding):
    out[...] = 0
    _max_pool(x, *_geometry(x, pool_size, strides, padding), g, out, 1)


@backend.register("max_pool_gather")
def max_pool_gather(out, x, u, pool_size, strides, padding):
    _max_pool(x, *_geometry(x, pool_size, strides, padding), u, out, 2)
