"""Winograd F(2x2, 3x3) tile transforms in numpy (``backends/winograd.py`` has the
algorithm): a piece's tile rows are taken image by image, each as one strided view of a
zero-padded band of the input, and every transform is a handful of whole-array adds into the
kernel's workspace, in place where it can be (``spare`` holds the padded band and one
temporary), so nothing is allocated per call.

The readable statement of the transforms, written with whole-array operations as the numpy
backend's kernels are: ``winograd.winograd_kernels(TRANSFORMS)`` is Winograd convolution in
plain numpy, and the tests check it, like the numba loops, against direct convolution. The
numpy backend does not register it: its many passes over strided views measured 1.5-1.6x the
time of numpy's im2col forward (``numpy_backend/conv_kernels.py``).
"""
import numpy as np
from numpy.lib.stride_tricks import as_strided

from hiapi.backends.winograd import Transforms
from hiapi.backends.workspace import aligned, take


def _segments(grid, rows):
    """(image, first tile row, stop tile row, first tile in the piece) per image covered."""
    first, stop = rows
    offset = 0
    while first < stop:
        n, ti = divmod(first, grid.th)
        end = min(stop, (n + 1) * grid.th)
        yield n, ti, ti + end - first, offset
        offset += (end - first) * grid.tw
        first = end


def _band(x, n, ti0, ti1, grid, spare):
    """The zero-padded input rows and columns that tile rows ti0..ti1 read, in ``spare``."""
    count, channels = ti1 - ti0, x.shape[3]
    band = take(spare, (2 * count + 2, 2 * grid.tw + 2, channels), x.dtype)
    band[...] = 0
    r0, c0 = 2 * ti0 - grid.top, -grid.left
    rs, re = max(r0, 0), min(r0 + band.shape[0], grid.h)
    cs, ce = max(c0, 0), min(c0 + band.shape[1], grid.w)
    if rs < re and cs < ce:
        band[rs - r0:re - r0, cs - c0:ce - c0] = x[n, rs:re, cs:ce]
    return band


def input_tiles(x, grid, rows, V, spare=None):
    """V[4ξ+ν, t] = (B^T d B)[ξ, ν] of each tile's 4x4 window d; B^T = [[1, 0, -1, 0],
    [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]] along the rows into ``V``, then along the
    columns in place."""
    channels = x.shape[3]
    for n, ti0, ti1, offset in _segments(grid, rows):
        count = ti1 - ti0
        band = _band(x, n, ti0, ti1, grid, spare)
        sr, sc, sch = band.strides
        d = as_strided(band, (count, grid.tw, 4, 4, channels), (2 * sr, 2 * sc, sr, sc, sch),
                       writeable=False)
        tiles = V[:, offset:offset + count * grid.tw].reshape(4, 4, count, grid.tw, channels)
        rows_out = tiles.transpose(1, 0, 2, 3, 4)             # [ν][ξ]: row ξ, column ν
        for b in range(4):
            _bt(d[:, :, 0, b], d[:, :, 1, b], d[:, :, 2, b], d[:, :, 3, b], rows_out[b])
        temporary = take(spare, (count, grid.tw, channels), x.dtype, aligned(band.nbytes))
        for a in range(4):
            _bt_in_place(tiles[a], temporary)


def _bt(d0, d1, d2, d3, out):
    np.subtract(d0, d2, out=out[0])
    np.add(d1, d2, out=out[1])
    np.subtract(d2, d1, out=out[2])
    np.subtract(d1, d3, out=out[3])


def _bt_in_place(v, temporary):
    """v (4, ...) = B^T @ v, with one temporary of v[0]'s size."""
    v[0] -= v[2]
    v[3] -= v[1]
    np.negative(v[3], out=v[3])                     # d1 - d3
    np.subtract(v[2], v[1], out=temporary)
    v[1] += v[2]
    v[2] = temporary


def output_tiles(M, grid, rows, out, spare=None):
    """Each tile's 2x2 outputs A^T m A, A^T = [[1, 1, 1, 0], [0, 1, -1, -1]], where they fall
    inside ``out``. The products ``M`` are overwritten (A^T along the rows, in place)."""
    filters = out.shape[3]
    for n, ti0, ti1, offset in _segments(grid, rows):
        count = ti1 - ti0
        m = M[:, offset:offset + count * grid.tw].reshape(4, 4, count, grid.tw, filters)
        m[0] += m[1]
        m[0] += m[2]                                # row 0 of A^T m: m0 + m1 + m2
        m[1] -= m[2]
        m[1] -= m[3]                                # row 1: m1 - m2 - m3
        for a in range(2):
            target = out[n, 2 * ti0 + a:min(2 * ti1, grid.oh):2]
            height = target.shape[0]
            for b in range(2):
                cell = target[:, b::2]
                width = cell.shape[1]
                first, second, third = (m[a, i, :height, :width] for i in (b, b + 1, b + 2))
                if b == 0:
                    np.add(first, second, out=cell)
                    cell += third
                else:
                    np.subtract(first, second, out=cell)
                    cell -= third


def gradient_tiles(g, grid, rows, D, spare=None):
    """D[4ξ+ν, t] = (A e A^T)[ξ, ν] of each tile's 2x2 output gradient e (zero outside g),
    A = [[1, 0], [1, 1], [1, -1], [0, -1]]: the adjoint of ``output_tiles``."""
    filters = g.shape[3]
    for n, ti0, ti1, offset in _segments(grid, rows):
        count = ti1 - ti0
        e = take(spare, (2 * count, 2 * grid.tw, filters), g.dtype)
        e[...] = 0
        part = g[n, 2 * ti0:min(2 * ti1, grid.oh)]
        e[:part.shape[0], :part.shape[1]] = part
        tiles = D[:, offset:offset + count * grid.tw].reshape(4, 4, count, grid.tw, filters)
        _a(e[0::2, 0::2], e[0::2, 1::2], tiles[0])     # A along the columns of row 0,
        _a(e[1::2, 0::2], e[1::2, 1::2], tiles[3])     # and of row 1 (in the last slots),
        np.add(tiles[0], tiles[3], out=tiles[1])       # then along the rows
        np.subtract(tiles[0], tiles[3], out=tiles[2])
        np.negative(tiles[3], out=tiles[3])


def _a(e0, e1, out):
    """out (4, ...) = A @ (e0, e1): e0, e0 + e1, e0 - e1, -e1."""
    out[0] = e0
    np.add(e0, e1, out=out[1])
    np.subtract(e0, e1, out=out[2])
    np.negative(e1, out=out[3])


def spare_bytes(grid, rows, channels, itemsize):
    """The largest temporary of the three transforms for ``rows`` tile rows of ``channels``:
    the input's zero-padded band and one row of tiles, or the gradient's padded copy."""
    tiles = rows * grid.tw
    inputs = aligned((2 * rows + 2) * (2 * grid.tw + 2) * channels * itemsize) \
        + tiles * channels * itemsize
    gradients = 4 * tiles * channels * itemsize
    return max(inputs, gradients)


TRANSFORMS = Transforms(input_tiles, output_tiles, gradient_tiles, spare_bytes)
