"""Convolution as GEMM: the three convolution ops lowered to one matrix product per group on
im2col columns, with the lowering (``im2col``/``col2im``) supplied by the backend.

Layout (NHWC): ``cols`` has one row per output position (N*OH*OW rows) and one column per
kernel tap and input channel (KH*KW*C columns, in the kernel's (kh, kw, c) order), so

    conv2d:             out(M, F)   = cols(M, K) @ w(K, F)
    conv2d_filter_grad: dw(K, F)    = cols(M, K).T @ g(M, F)     (BLAS reads the transpose)
    conv2d_input_grad:  dcols(M, K) = g(M, F) @ w(K, F).T, then col2im adds each window back

Every GEMM reads and writes contiguous 2-D buffers; the columns are made a few images at a
time (``CHUNK_BYTES``), or a band of one image's rows (``BAND_BYTES``) when one image is larger,
in the kernel's planned workspace (``hiapi.backends.workspace``), so they stay in cache and a
step allocates nothing outside the memory plan: ``conv_scratch`` declares
the columns, the lowering's own temporaries (the numpy lowering's zero-padded input and col2im
grid; none for numba's loops) and the filter gradient's per-chunk product. The numpy backend
lowers with strided copies; the numba backend registers the same kernels with parallel loops.

With more than one thread the forward convolution runs whole pieces (lowering + GEMM) on the
thread budget's threads, each GEMM single-threaded (``backends/chunk_workers.py``): the threads
share the ``CHUNK_BYTES`` of columns, so the plan holds no more memory, and the result does not
depend on the thread count. The gradients split each piece's GEMM in the fixed bands of
``backends/gemm_bands.py`` over the same threads, so they do not depend on it either.
"""
from collections import namedtuple
from functools import lru_cache

import numpy as np
from numpy.lib.stride_tricks import as_strided

from hiapi.runtime import threads
from hiapi.backends import gemm_bands
from hiapi.backends.chunk_workers import workers
from hiapi.backends.workspace import aligned, take
from hiapi.backends import conv_geometry as geo

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


def _per_chunk(shape, columns, itemsize, chunk_bytes=None):
    chunk_bytes = chunk_bytes or CHUNK_BYTES
    return min(shape.n, max(1, chunk_bytes // max(shape.oh * shape.ow * columns * itemsize, 1)))


# An image whose columns exceed CHUNK_BYTES is taken in equal bands of output rows of at most
# this many bytes: larger than a chunk, since each piece costs a dispatch and a smaller GEMM.
# Measured on 2 cores (numba, 3x3x64 taps on 64x64 at batch 32, 9.1 MiB per image): two bands
# of 4.5 MiB ran as fast as whole images (63-74 ms per op against 69-93), three of 3.1 MiB
# 10-15 % slower.
BAND_BYTES = 6 << 20


def _rows_per_band(shape, columns, itemsize, chunk_bytes=None):
    """Output rows per chunk: all of them, or a band when one image's columns alone exceed
    ``CHUNK_BYTES`` (a 64x64 image of 3x3x64 taps is 9 MiB: banding halves the planned
    scratch, a fixed part of a recomputing step's arena). Threads that share the chunk
    (``chunk_bytes`` less than it) share the band bytes the same way."""
    chunk_bytes = chunk_bytes or CHUNK_BYTES
    if shape.oh * shape.ow * columns * itemsize <= chunk_bytes:
        return shape.oh
    band_bytes = BAND_BYTES * chunk_bytes // CHUNK_BYTES
    most = max(1, band_bytes // max(shape.ow * columns * itemsize, 1))
    bands = -(-shape.oh // most)
    return -(-shape.oh // bands)               # equal bands: no small last GEMM


Piece = namedtuple("Piece", "images in_rows out_rows shape")


def _pieces(shape, columns, itemsize, chunk_bytes=None):
    """Pieces covering the batch in cache-sized chunks: a few whole images, or one image's
    band of output rows with the input rows its windows read (``in_rows``), as a geometry of
    its own (``top`` is the band's own padding), so the same lowering serves both."""
    rows = _rows_per_band(shape, columns, itemsize, chunk_bytes)
    if rows == shape.oh:
        per = _per_chunk(shape, columns, itemsize, chunk_bytes)
        for start in range(0, shape.n, per):
            stop = min(start + per, shape.n)
            yield Piece(slice(start, stop), slice(None), slice(None),
                        shape._replace(n=stop - start))
        return
    for n in range(shape.n):
        for i0 in range(0, shape.oh, rows):
            i1 = min(i0 + rows, shape.oh)
            lo = i0 * shape.sh - shape.top                       # first input row read
            hi = (i1 - 1) * shape.sh - shape.top + (shape.kh - 1) * shape.dh + 1
            r0, r1 = max(lo, 0), min(hi, shape.h)
            yield Piece(slice(n, n + 1), slice(r0, r1), slice(i0, i1),
                        shape._replace(n=1, h=r1 - r0, top=r0 - lo, oh=i1 - i0))


def _gemm_into(out, a, b):
    """``out[...] = a @ b`` (``out`` viewed as a matrix), straight into ``out`` when it is
    contiguous; in the fixed bands of ``backends/gemm_bands.py``, so the bits do not depend on the
    thread count."""
    if out.flags.c_contiguous:
        gemm_bands.matmul(out.reshape(a.shape[0], b.shape[1]), a, b)
    else:
        product = np.empty((a.shape[0], b.shape[1]), np.result_type(a, b))
        gemm_bands.matmul(product, a, b)
        out[...] = product.reshape(out.shape)


class Scratch:
    """Where a convolution's temporaries sit in its workspace, for one geometry: the columns
    of the largest piece, then the lowering's own (``spare``), then the filter gradient's
    product of one piece (when there are several). ``nbytes`` is what the kernel declares."""

    def __init__(self, shape, columns, filters, itemsize, lowering_bytes):
        pieces = [p.shape for p in _pieces(shape, columns, itemsize)]
        self.spare = aligned(max(p.n * p.oh * p.ow for p in pieces) * columns * itemsize)
        self.product = self.spare + aligned(max(lowering_bytes(p, itemsize) for p in pieces))
        self.nbytes = self.product + (aligned(columns * filters * itemsize) if len(pieces) > 1
                                      else 0)


class ThreadedScratch:
    """The forward's workspace when its pieces run on several threads: one slot per thread
    (the columns of its largest piece, then the lowering's own temporary), the pieces sized so
    that the slots together take about ``CHUNK_BYTES``, as one piece did."""

    def __init__(self, shape, columns, itemsize, lowering_bytes, slots):
        image = shape.oh * shape.ow * columns * itemsize
        share = min(CHUNK_BYTES // slots, -(-shape.n // slots) * image)   # a small batch too
        self.pieces = list(_pieces(shape, columns, itemsize, max(1, share)))
        parts = [p.shape for p in self.pieces]
        self.columns_bytes = aligned(max(p.n * p.oh * p.ow for p in parts) * columns * itemsize)
        self.slot = self.columns_bytes + aligned(max(lowering_bytes(p, itemsize)
                                                     for p in parts))
        self.slots = slots
        self.nbytes = slots * self.slot

    def columns(self, workspace, slot, shape, dtype):
        return take(workspace, shape, dtype, slot * self.slot)

    def spare(self, workspace, slot):
        if workspace is None:
            return None
        start = slot * self.slot
        return workspace[start + self.columns_bytes:start + self.slot]


def _planned_layout(shape, columns, itemsize, lowering_bytes, threads_count):
    """The forward's layout for ``threads_count`` threads: as many slots as threads, unless
    that needs more memory than one slot (an image, or a band, larger than a thread's share
    of the chunk), then fewer. Cached: the forward asks every call, and working the pieces
    out took 160 us a call for a CIFAR layer (the layouts are never modified); the chunk and
    band sizes are part of the key, so changing them is seen."""
    return _cached_layout(shape, columns, itemsize, lowering_bytes, threads_count,
                          CHUNK_BYTES, BAND_BYTES)


@lru_cache(maxsize=512)
def _cached_layout(shape, columns, itemsize, lowering_bytes, threads_count, chunk, band):
    """``_planned_layout``; ``chunk`` and ``band`` (the module's sizes) only key the cache."""
    single = ThreadedScratch(shape, columns, itemsize, lowering_bytes, 1)
    for slots in range(threads_count, 1, -1):
        at = ThreadedScratch(shape, columns, itemsize, lowering_bytes, slots)
        if at.nbytes <= single.nbytes:
            return at
    return single


def _threaded_layout(shape, columns, itemsize, lowering_bytes, workspace):
    """The layout the forward's workspace was planned with: for the budget's thread count, or
    (when the budget changed since, ``config.set_num_threads``) the largest that fits."""
    planned = threads.num_threads()
    for count in [planned] + [n for n in range(16, 0, -1) if n != planned]:
        at = _planned_layout(shape, columns, itemsize, lowering_bytes, count)
        if workspace is None or at.nbytes <= workspace.nbytes:
            return at
    return ThreadedScratch(shape, columns, itemsize, lowering_bytes, 1)  # ``take`` says why


def conv_kernels(im2col, col2im, lowering_bytes, serial=None):
    """The three convolution kernels, lowering with ``im2col(x, geometry, cols, spare)`` and
    ``col2im(cols, geometry, out, spare)`` (which adds into ``out``); ``spare`` is the
    lowering's ``lowering_bytes(geometry, itemsize)`` of workspace. ``serial`` is an im2col
    safe to run on several threads at once, used when the forward's pieces are spread over
    threads (default: ``im2col`` itself)."""
    serial_im2col = serial or im2col

    def conv2d(out, x, w, strides, padding, dilation, groups, workspace=None):
        kernel_hw, cin, f = w.shape[:2], w.shape[2], w.shape[3]
        shape = geometry(x.shape, kernel_hw, out.shape[1:3], strides, padding, dilation, cin)
        k = shape.kh * shape.kw * cin
        at = _threaded_layout(shape, k, x.itemsize, lowering_bytes, workspace)
        n = workers.count(len(at.pieces), at.slots)
        lower = serial_im2col if n > 1 else im2col
        for cs, fs in zip(_slices(x.shape[3], groups), _slices(f, groups)):
            weights = w[..., fs].reshape(k, f // groups)

            def job(piece, slot, cs=cs, fs=fs, weights=weights):
                images, rows_in, rows_out, part = piece
                cols = at.columns(workspace, slot, (part.n * part.oh * part.ow, k), x.dtype)
                lower(x[images, rows_in, :, cs], part, cols, at.spare(workspace, slot))
                _gemm_into(out[images, rows_out, :, fs], cols, weights)
            workers.run(at.pieces, job, n)

    def conv2d_filter_grad(out, x, g, kernel_hw, strides, padding, dilation, groups,
                           workspace=None):
        cin, f = out.shape[2], out.shape[3]
        shape = geometry(x.shape, kernel_hw, g.shape[1:3], strides, padding, dilation, cin)
        k = shape.kh * shape.kw * cin
        at = Scratch(shape, k, f // groups, x.itemsize, lowering_bytes)
        g = np.ascontiguousarray(g)
        for cs, fs in zip(_slices(x.shape[3], groups), _slices(f, groups)):
            target = out[..., fs]
            for n, (images, rows_in, rows_out, part) in enumerate(
                    _pieces(shape, k, x.itemsize)):
                cols = take(workspace, (part.n * part.oh * part.ow, k), x.dtype)
                im2col(x[images, rows_in, :, cs], part, cols, _spare(workspace, at))
                g_rows = g[images, rows_out].reshape(-1, f)[:, fs]
                if n == 0:
                    _gemm_into(target, cols.T, g_rows)
                else:
                    product = take(workspace, (k, f // groups), out.dtype, at.product)
                    gemm_bands.matmul(product, cols.T, g_rows)
                    target += product.reshape(target.shape)

    def conv2d_input_grad(out, g, w, input_hw, strides, padding, dilation, groups,
                          workspace=None):
        kernel_hw, cin, f = w.shape[:2], w.shape[2], w.shape[3]
        shape = geometry(out.shape, kernel_hw, g.shape[1:3], strides, padding, dilation, cin)
        k = shape.kh * shape.kw * cin
        at = Scratch(shape, k, f // groups, out.itemsize, lowering_bytes)
        g = np.ascontiguousarray(g)
        out[...] = 0
        for cs, fs in zip(_slices(out.shape[3], groups), _slices(f, groups)):
            weights_t = w[..., fs].reshape(k, f // groups).T
            for images, rows_in, rows_out, part in _pieces(shape, k, out.itemsize):
                cols = take(workspace, (part.n * part.oh * part.ow, k), out.dtype)
                gemm_bands.matmul(cols, g[images, rows_out].reshape(-1, f)[:, fs], weights_t)
                col2im(cols, part, out[images, rows_in, :, cs], _spare(workspace, at))

    return conv2d, conv2d_filter_grad, conv2d_input_grad


def _spare(workspace, at):
    return None if workspace is None else workspace[at.spare:at.product]


def conv_scratch(lowering_bytes):
    """The three kernels' ``scratch(shapes, dtypes, attrs)`` declarations (shapes: the
    output's, then the inputs')."""

    def _geometry(input_shape, kernel_hw, out_hw, channels, attrs):
        return geometry(input_shape, kernel_hw, out_hw, attrs["strides"], attrs["padding"],
                        attrs["dilation"], channels)

    def conv2d(shapes, dtypes, attrs):
        out, x, w = shapes
        shape = _geometry(x, w[:2], out[1:3], w[2], attrs)
        return _planned_layout(shape, shape.kh * shape.kw * shape.c, dtypes[0].itemsize,
                               lowering_bytes, threads.num_threads()).nbytes

    def conv2d_filter_grad(shapes, dtypes, attrs):
        out, x, g = shapes
        shape = _geometry(x, attrs["kernel_hw"], g[1:3], out[2], attrs)
        return _declared(shape, out[3] // attrs["groups"], dtypes[0])

    def conv2d_input_grad(shapes, dtypes, attrs):
        out, g, w = shapes
        shape = _geometry(out, w[:2], g[1:3], w[2], attrs)
        return _declared(shape, w[3] // attrs["groups"], dtypes[0])

    def _declared(shape, filters, dtype):
        columns = shape.kh * shape.kw * shape.c
        return Scratch(shape, columns, filters, dtype.itemsize, lowering_bytes).nbytes

    return conv2d, conv2d_filter_grad, conv2d_input_grad


def no_lowering_bytes(shape, itemsize):
    """For lowerings that need no temporary of their own (numba's loops)."""
    return 0


def register_conv_kernels(backend, im2col, col2im, lowering_bytes=no_lowering_bytes,
                          serial_im2col=None):
    """Register the three convolution kernels, lowered by ``im2col``/``col2im`` (and
    ``serial_im2col`` on the forward's worker threads), with their planned scratch."""
    for name, kernel, scratch in zip(("conv2d", "conv2d_filter_grad", "conv2d_input_grad"),
                                     conv_kernels(im2col, col2im, lowering_bytes, serial_im2col),
                                     conv_scratch(lowering_bytes)):
        backend.register(name, scratch=scratch)(kernel)


def windows(x, shape):
    """View (N, OH, OW, KH, KW, C) of the padded input ``x``: [n, i, j] is one window."""
    sn, sh, sw, sc = x.strides
    return as_strided(x, (shape.n, shape.oh, shape.ow, shape.kh, shape.kw, x.shape[3]),
                      (sn, sh * shape.sh, sw * shape.sw, sh * shape.dh, sw * shape.dw, sc),
                      writeable=False)


def _padded_extent(shape):
    return [(o - 1) * s + (k - 1) * d + 1 for o, s, k, d in
            ((shape.oh, shape.sh, shape.kh, shape.dh), (shape.ow, shape.sw, shape.kw, shape.dw))]


def _grid_hw(shape):
    """Height and width of the zero-padded input: every window's extent and the input."""
    height, width = _padded_extent(shape)
    return max(height, shape.top + shape.h), max(width, shape.left + shape.w)


def _needs_padding(shape):
    height, width = _padded_extent(shape)
    return shape.top or shape.left or height > shape.h or width > shape.w


def numpy_lowering_bytes(shape, itemsize):
    """The numpy lowering's temporary: one zero-padded copy of the chunk's input (im2col, only
    when the convolution pads) or col2im's accumulation grid, whichever is asked."""
    height, width = _grid_hw(shape)
    return shape.n * height * width * shape.c * itemsize


def numpy_im2col(x, shape, cols, spare=None):
    """One strided copy of every window into ``cols`` (after zero padding, if any, into
    ``spare``)."""
    if _needs_padding(shape):
        height, width = _grid_hw(shape)
        grid = take(spare, (shape.n, height, width, x.shape[3]), x.dtype)
        grid[...] = 0
        grid[:, shape.top:shape.top + shape.h, shape.left:shape.left + shape.w] = x
        x = grid
    view = windows(x, shape)
    np.copyto(cols.reshape(view.shape), view)


def numpy_col2im(cols, shape, out, spare=None):
    """Add each window's column block back at its input position: one strided add per tap,
    into a zeroed grid in ``spare``."""
    height, width = _grid_hw(shape)
    grid = take(spare, (shape.n, height, width, out.shape[3]), out.dtype)
    grid[...] = 0
    blocks = cols.reshape(shape.n, shape.oh, shape.ow, shape.kh, shape.kw, out.shape[3])
    for i in range(shape.kh):
        for j in range(shape.kw):
            h0, w0 = i * shape.dh, j * shape.dw
            grid[:, h0:h0 + shape.sh * shape.oh:shape.sh,
                 w0:w0 + shape.sw * shape.ow:shape.sw] += blocks[:, :, :, i, j]
    out += grid[:, shape.top:shape.top + shape.h, shape.left:shape.left + shape.w]
