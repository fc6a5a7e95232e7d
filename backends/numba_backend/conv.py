"""Convolution on the numba backend: the numpy backend's GEMM lowering (``im2col.register_conv_kernels``)
with im2col and col2im as loops that read the input once, in place of strided copies and a
padded temporary: parallel when one chunk is lowered at a time, serial (and free of the GIL)
when the forward's chunks themselves run on several threads. The GEMMs stay in BLAS: measured
on 2 cores, a direct convolution loop in numba reached a fraction of OpenBLAS's sgemm rate on
every layer of the benchmark convnets (again in issue #14 for the 9- and 27-tap first layers:
1.3-2x slower than im2col + GEMM forward, and the filter gradient no faster), so im2col + GEMM
is used for every shape.
"""
from types import FunctionType

from numba import njit, prange

from hiapi.backends.numba_backend.registry import backend
from hiapi.backends.numpy_backend.im2col import register_conv_kernels


@njit(parallel=True, cache=True)
def _im2col(x, kh, kw, sh, sw, dh, dw, top, left, oh, ow, cols):
    """Parallel over output rows (of all images): a chunk is often one image or a band of
    one image's rows, which a loop over images would give to one thread."""
    n_batch, height, width, channels = x.shape
    for t in prange(n_batch * oh):
        n, i = t // oh, t % oh
        row0 = t * ow
        if channels == 1:       # one value per tap: walk along the output row instead
            for a in range(kh):
                r = i * sh - top + a * dh
                for b in range(kw):
                    tap, q0 = a * kw + b, b * dw - left
                    for j in range(ow):
                        q = j * sw + q0
                        inside = 0 <= r < height and 0 <= q < width
                        cols[row0 + j, tap] = x[n, r, q, 0] if inside else 0
            continue
        for j in range(ow):
            for a in range(kh):
                r = i * sh - top + a * dh
                for b in range(kw):
                    q = j * sw - left + b * dw
                    base = (a * kw + b) * channels
                    if 0 <= r < height and 0 <= q < width:
                        for c in range(channels):
                            cols[row0 + j, base + c] = x[n, r, q, c]
                    else:
                        for c in range(channels):
                            cols[row0 + j, base + c] = 0


@njit(parallel=True, cache=True)
def _col2im(cols, kh, kw, sh, sw, dh, dw, top, left, oh, ow, out):
    """Adds into ``out``; parallel over images, so no two threads touch the same element."""
    n_batch, height, width, channels = out.shape
    for n in prange(n_batch):
        for i in range(oh):
            for j in range(ow):
                row = (n * oh + i) * ow + j
                for a in range(kh):
                    r = i * sh - top + a * dh
                    if r < 0 or r >= height:
                        continue
                    for b in range(kw):
                        q = j * sw - left + b * dw
                        if q < 0 or q >= width:
                            continue
                        base = (a * kw + b) * channels
                        for c in range(channels):
                            out[n, r, q, c] += cols[row, base + c]


def _serial(parallel):
    """The same loop compiled without threads and without the GIL, for chunks that run on
    hiapi's worker threads (``backends/chunk_workers.py``): a parallel loop may not be launched
    from two threads at once. Renamed, because numba's disk cache is keyed by the function's
    name and line and would otherwise hand back the parallel build."""
    code = parallel.py_func
    function = FunctionType(code.__code__, code.__globals__, code.__name__ + "_serial")
    function.__qualname__ = function.__name__
    return njit(cache=True, nogil=True)(function)


_im2col_serial = _serial(_im2col)


def _lowering(s):
    return s.kh, s.kw, s.sh, s.sw, s.dh, s.dw, s.top, s.left, s.oh, s.ow


def im2col(x, shape, cols, spare=None):         # the loops pad on the fly: no spare needed
    _im2col(x, *_lowering(shape), cols)


def col2im(cols, shape, out, spare=None):
    _col2im(cols, *_lowering(shape), out)


def serial_im2col(x, shape, cols, spare=None):
    _im2col_serial(x, *_lowering(shape), cols)


register_conv_kernels(backend, im2col, col2im, serial_im2col=serial_im2col)
