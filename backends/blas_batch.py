"""A product's fixed bands in one call of BLAS's batched GEMM, on BLAS's own threads.

Why: the bands (``backends/gemm_bands.py``) keep a product's bits on any thread count because
each band is one single-threaded BLAS call. Run on hiapi's chunk workers, every product paid
for handing its bands to a pool thread (a futex wake-up, 60-90 us on a 2-core AMD EPYC VM),
for setting BLAS to one thread and back (10-15 us), and for Python's futures around them: 5-9 %
of a batch-256 ``predict`` over the product whole (docs/performance.md, the eighth round).
Recent OpenBLAS (numpy's wheels bundle 0.3.31) has ``cblas_?gemm_batch``, which runs a list
of products each with its serial driver (``driver/level3/gemm_batch_thread.c``: one product
per thread, never split) and hands them to the same threads and the same wake-up a whole
product uses. So each band is computed by the same serial call on 1 thread or on 2, the bits
of the pool's bands (tested), and the hand-over is BLAS's own. That is the driver's code, not
its contract, so ``gemm_bands`` checks it once per shape and layout before using a batch.

One trap in that driver: a product of at most ``SMALL`` multiply-adds goes to OpenBLAS's
small-matrix kernels, and in numpy's DYNAMIC_ARCH build (0.3.31) the batched interface calls
that kernel's table offset as if it were its address: a segmentation fault (the plain
``cblas_?gemm`` looks the address up). So ``prepare`` refuses a band of that size; the bands
of ``gemm_bands`` are larger (``MIN_SPLIT_FLOPS``), a single band may not be.

A binding is used only after it computed a batch right (checked once against ``matmul``);
without one (another BLAS, an older OpenBLAS), ``available()`` is False and the bands run on
the chunk workers as before.
"""
import ctypes
import weakref

import numpy as np

from hiapi.backends import blas

_functions = None           # {dtype: (ctypes function, its integer type)}, found on first use
SMALL = 100 ** 3            # multiply-adds: OpenBLAS's batched small-matrix route, never taken


def _declare(function, integer, scalar):
    """The batched GEMM's ctypes types: the order, thirteen arrays (flags, sizes, scales,
    pointers, leading dimensions), the group count and the group sizes."""
    function.argtypes = [ctypes.c_int] + [ctypes.c_void_p] * 13 + [integer, ctypes.c_void_p]
    return function, integer


def _functions_found():
    global _functions
    if _functions is None:
        _functions = blas.bind("gemm_batch", _declare, _works)
    return _functions


def _works(found):
    """The binding computes two bands of a transposed product with alpha and beta right (each
    band above ``SMALL``)."""
    rng = np.random.default_rng(0)
    for dtype, binding in found.items():
        a, b = rng.random((64, 128)).astype(dtype), rng.random((64, 256)).astype(dtype)
        out = rng.random((128, 256)).astype(dtype)
        expected = 0.5 * out - 2.0 * (a.T @ b)
        Batch(binding, out, a.T, b, 1, ((0, 128), (128, 256)))(out, a.T, b, -2.0, 0.5)
        if not np.allclose(out, expected, rtol=1e-5):
            return False
    return True


def available(dtype=np.float32):
    """True when ``prepare`` can give a ``Batch`` on this BLAS for ``dtype`` (float32 or
    float64)."""
    return np.dtype(dtype) in _functions_found()


def prepare(out, a, b, axis, bounds):
    """A ``Batch`` that runs ``a @ b`` into ``out`` in these bands (rows of ``out`` for axis
    0, columns for axis 1), for every later call with operands of the same layout; None where
    it cannot: operands BLAS cannot read as they are (``blas.can_run``), no batched GEMM for
    their dtype, or a band of at most ``SMALL`` multiply-adds (see the module docstring)."""
    if not (out.ndim == 2 and blas.can_run(out, a, b) and available(out.dtype)):
        return None
    other = out.shape[1 - axis] * a.shape[1]
    if not all((stop - start) * other > SMALL for start, stop in bounds):
        return None
    return Batch(_functions_found()[out.dtype], out, a, b, axis, bounds)


class Batch:
    """One layout's bands as one call of BLAS's batched GEMM: what every call shares (each
    band's flags, sizes, leading dimensions and byte offsets into the operands) is built once;
    a call adds the operands' addresses to the offsets and calls BLAS. On a 2-core EPYC VM
    that is 5 us of Python and ctypes when the operands are the last call's (a compiled
    step's buffers), 25 us when they are new; handing the bands to a pool thread cost
    60-90 us."""

    def __init__(self, binding, out, a, b, axis, bounds):
        self.function, integer = binding
        self.count = count = len(bounds)
        self.layout = (a.strides, b.strides, out.strides, a.shape, b.shape)
        self.dtype = out.dtype
        ints = np.int64 if integer is ctypes.c_int64 else np.int32
        fields = {name: np.empty(count, ints) for name in ("m", "n", "k", "lda", "ldb", "ldc")}
        flags = np.empty((2, count), np.int32)
        self.offsets = np.zeros((3, count), np.uint64)
        for i, (start, stop) in enumerate(bounds):
            width = stop - start
            if axis == 0:           # rows of a and out
                part_a, part_b, part_out = (width, a.shape[1]), b.shape, (width, out.shape[1])
            else:                   # columns of b and out
                part_a, part_b, part_out = a.shape, (b.shape[0], width), (out.shape[0], width)
            self.offsets[axis, i] = start * (a, b)[axis].strides[axis]
            self.offsets[2, i] = start * out.strides[axis]
            (flags[0, i], fields["lda"][i]), (flags[1, i], fields["ldb"][i]), \
                (_, fields["ldc"][i]) = (blas.layout_of(shape, array.strides, array.itemsize)
                                         for shape, array in ((part_a, a), (part_b, b),
                                                              (part_out, out)))
            fields["m"][i], fields["k"][i], fields["n"][i] = part_a[0], part_a[1], part_b[1]
        self._scales = (None, None, None, None)   # alpha, beta, their array's address, it
        self._last = (_nothing,) * 3 + (None, None)   # refs to a, b, out; their bands' pointers
        self.row, self.scale_row = 8 * count, out.itemsize * count   # bytes to the next array
        sizes = np.ones(count, ints)
        self._keep = (fields, flags, sizes)       # the arrays the addresses below point into
        self.flags = (flags[0].ctypes.data, flags[1].ctypes.data, fields["m"].ctypes.data,
                      fields["n"].ctypes.data, fields["k"].ctypes.data)
        self.leading = tuple(fields[name].ctypes.data for name in ("lda", "ldb", "ldc"))
        self.sizes = sizes.ctypes.data

    def __call__(self, out, a, b, alpha=1.0, beta=0.0):
        """``out = alpha * a @ b + beta * out``, band by band (operands of the prepared
        layout). Safe from several threads at once (the conv chunks' products share
        layouts): what a call reads from ``self`` is replaced whole, never changed. The band
        pointers of the last operands are kept with weak references to them: a compiled
        step passes the same buffers call after call, and asking numpy for an address costs
        3 us here; a live reference that ``is`` the operand is that array, with that memory,
        and the routes (kept for the process) do not keep a deleted model's arrays alive."""
        # locals hold what BLAS reads until it returns (another thread may replace them)
        last, scales = self._last, self._scales
        if last[0]() is not a or last[1]() is not b or last[2]() is not out:
            if (a.strides, b.strides, out.strides, a.shape, b.shape) != self.layout:
                raise ValueError(f"a Batch prepared for strides {self.layout[:3]} and shapes "
                                 f"{self.layout[3:]} was given {a.strides}, {b.strides}, "
                                 f"{out.strides} and {a.shape}, {b.shape}")
            array = self.offsets + np.array(
                (a.ctypes.data, b.ctypes.data, out.ctypes.data), np.uint64)[:, None]
            last = (weakref.ref(a), weakref.ref(b), weakref.ref(out), array.ctypes.data, array)
            self._last = last
        pointers = last[3]
        if scales[0] != alpha or scales[1] != beta:
            array = np.array(((alpha,) * self.count, (beta,) * self.count), self.dtype)
            scales = (alpha, beta, array.ctypes.data, array)
            self._scales = scales
        lda, ldb, ldc = self.leading
        self.function(blas.ROW_MAJOR, *self.flags, scales[2], pointers, lda,
                      pointers + self.row, ldb, scales[2] + self.scale_row, pointers +
                      2 * self.row, ldc, self.count, self.sizes)


def _nothing():
    """What a dead weak reference returns: before a ``Batch``'s first call, no operand is
    its last."""
    return None
