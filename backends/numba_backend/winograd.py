"""Winograd F(2x2, 3x3) tile transforms as numba loops (``backends/winograd.py`` has the
algorithm): each tile's 4x4 window is read once (in place, or copied with its zero padding at
the borders) and transformed with adds vectorised over the channels, which NHWC keeps
contiguous (reading windows in place measured 0.69-0.80 of copying every one first). The loops
are serial and release the GIL: the pieces of tiles themselves run on hiapi's threads.
"""
import numpy as np
from numba import njit

from hiapi.backends.numba_backend.registry import backend
from hiapi.backends.winograd import Transforms, register_winograd


@njit(cache=True, nogil=True, inline="always")
def _along_rows(window, r0, q0, s, channels):
    """s[:, b] = B^T @ (column b of the 4x4 window at (r0, q0) of ``window``)."""
    for b in range(4):
        for c in range(channels):
            d0, d1 = window[r0, q0 + b, c], window[r0 + 1, q0 + b, c]
            d2, d3 = window[r0 + 2, q0 + b, c], window[r0 + 3, q0 + b, c]
            s[0, b, c] = d0 - d2
            s[1, b, c] = d1 + d2
            s[2, b, c] = d2 - d1
            s[3, b, c] = d1 - d3


@njit(cache=True, nogil=True)
def _input_tiles(x, th, tw, top, left, first, stop, V):
    """V[4ξ+ν, t, c] = (B^T d B)[ξ, ν] for tile t's 4x4 window d of channel c, with
    B^T = [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]]. Windows inside the
    input are read in place; the others are first copied, zero-padded, into ``d``."""
    _, height, width, channels = x.shape
    d = np.empty((4, 4, channels), x.dtype)
    s = np.empty((4, 4, channels), x.dtype)
    t = 0
    for row in range(first, stop):
        n, ti = row // th, row % th
        r0 = 2 * ti - top
        for tj in range(tw):
            q0 = 2 * tj - left
            if r0 >= 0 and q0 >= 0 and r0 + 4 <= height and q0 + 4 <= width:
                _along_rows(x[n], r0, q0, s, channels)
            else:
                for a in range(4):
                    for b in range(4):
                        r, q = r0 + a, q0 + b
                        inside = 0 <= r < height and 0 <= q < width
                        for c in range(channels):
                            d[a, b, c] = x[n, r, q, c] if inside else 0
                _along_rows(d, 0, 0, s, channels)
            for a in range(4):              # then B^T along each row's columns
                for c in range(channels):
                    s0, s1, s2, s3 = s[a, 0, c], s[a, 1, c], s[a, 2, c], s[a, 3, c]
                    V[4 * a, t, c] = s0 - s2
                    V[4 * a + 1, t, c] = s1 + s2
                    V[4 * a + 2, t, c] = s2 - s1
                    V[4 * a + 3, t, c] = s1 - s3
            t += 1


@njit(cache=True, nogil=True)
def _output_tiles(M, th, tw, first, stop, out):
    """Each tile's 2x2 outputs A^T m A, A^T = [[1, 1, 1, 0], [0, 1, -1, -1]], written where
    they fall inside ``out``."""
    _, height, width, filters = out.shape
    u = np.empty((2, 4, filters), M.dtype)
    t = 0
    for row in range(first, stop):
        n, ti = row // th, row % th
        i = 2 * ti
        for tj in range(tw):
            j = 2 * tj
            for b in range(4):
                for k in range(filters):
                    m1, m2 = M[4 + b, t, k], M[8 + b, t, k]
                    u[0, b, k] = M[b, t, k] + m1 + m2
                    u[1, b, k] = m1 - m2 - M[12 + b, t, k]
            for a in range(2):
                if i + a >= height:
                    continue
                for k in range(filters):
                    out[n, i + a, j, k] = u[a, 0, k] + u[a, 1, k] + u[a, 2, k]
                if j + 1 < width:
                    for k in range(filters):
                        out[n, i + a, j + 1, k] = u[a, 1, k] - u[a, 2, k] - u[a, 3, k]
            t += 1


@njit(cache=True, nogil=True)
def _gradient_tiles(g, th, tw, first, stop, D):
    """D[4ξ+ν, t, k] = (A e A^T)[ξ, ν] for tile t's 2x2 output gradient e (zero outside
    ``g``), A = [[1, 0], [1, 1], [1, -1], [0, -1]]: the adjoint of the output transform."""
    _, height, width, filters = g.shape
    e = np.empty((2, 2, filters), g.dtype)
    s = np.empty((4, 2, filters), g.dtype)
    t = 0
    for row in range(first, stop):
        n, ti = row // th, row % th
        for tj in range(tw):
            for a in range(2):
                for b in range(2):
                    r, q = 2 * ti + a, 2 * tj + b
                    if r < height and q < width:
                        for k in range(filters):
                            e[a, b, k] = g[n, r, q, k]
                    else:
                        for k in range(filters):
                            e[a, b, k] = 0
            for b in range(2):
                for k in range(filters):
                    e0, e1 = e[0, b, k], e[1, b, k]
                    s[0, b, k] = e0
                    s[1, b, k] = e0 + e1
                    s[2, b, k] = e0 - e1
                    s[3, b, k] = -e1
            for a in range(4):
                for k in range(filters):
                    s0, s1 = s[a, 0, k], s[a, 1, k]
                    D[4 * a, t, k] = s0
                    D[4 * a + 1, t, k] = s0 + s1
                    D[4 * a + 2, t, k] = s0 - s1
                    D[4 * a + 3, t, k] = -s1
            t += 1


def input_tiles(x, grid, rows, V, spare=None):
    _input_tiles(x, grid.th, grid.tw, grid.top, grid.left, rows[0], rows[1], V)


def output_tiles(M, grid, rows, out, spare=None):
    _output_tiles(M, grid.th, grid.tw, rows[0], rows[1], out)


def gradient_tiles(g, grid, rows, D, spare=None):
    _gradient_tiles(g, grid.th, grid.tw, rows[0], rows[1], D)


def no_spare(grid, rows, channels, itemsize):
    return 0


register_winograd(backend, Transforms(input_tiles, output_tiles, gradient_tiles, no_spare))
