"""The fixed bands of a BLAS product (``backends/gemm_bands.py``) on spinning helpers: each band
one ``cblas_?gemm`` call made from a numba ``nogil`` loop, BLAS at one thread.

Why: where a product's bits follow BLAS's thread count, it runs in bands while the thread
tuner adapts, and the chunk workers hand the bands to a thread pool whose thread has to be
woken for every product. On the 2-core AMD EPYC VM, where OpenBLAS's Haswell kernels make
every product of the MLP 784-1024-1024-10 run in bands, the pool's hand-over and the checks
before it cost 0.25 ms of each 6-8 ms product: a batch-256 ``predict`` took 5-6 % longer in
bands than whole (paired, one process). The helpers here are those of the dense chain
(``spin_workers.py``): they spin a short while after a job, so a product that follows the
last one within ``HIAPI_SPIN_US`` finds them awake, and a job is handed over by a flag, not a
futex.

The bands are the chunk workers' (``band_plan``'s bounds, from the shape alone) and each is
the same ``gemm`` call with the same arguments, so the bits are theirs on any number of
threads; the threads take the bands from a shared counter (``fetch_add``), as the chunk
workers do, so a thread the scheduler left out leaves its bands to the others.

Like the chunk workers (``backends/chunk_workers.py``), before their first job the threads
each run one ``WARM_UP`` product at the same time: OpenBLAS's buffer of a thread runs a
single-threaded GEMM 3x slower until a product that wide ran on it (measured on that VM).
"""
import os

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from hiapi.backends import blas
from hiapi.backends.chunk_workers import WARM_UP, workers as chunk_workers
from hiapi.backends.numba_backend.spin_workers import (SpinWorkers, fetch_add, job_done,
                                                       next_job)

ROW_MAJOR = 101
# the descriptor: a header, then a record per band
(ADDRESS, INTEGER_BITS, DOUBLE, NEXT, BANDS, K, TRANS_A, TRANS_B, LDA, LDB, LDC, DEALT,
 ALPHA, BETA) = range(14)
HEADER = 14
M, N, A, B, C = range(5)    # a band: its rows and columns, and where its a, b and out start
RECORD = 5


def _gemm(double, integer_bits):
    """An intrinsic that calls ``cblas_?gemm`` (row-major) at an address: every integer and
    pointer passed as an int64, ``alpha`` and ``beta`` as float64; ``double`` and
    ``integer_bits`` are those of the library's function (``blas.entry``)."""
    @intrinsic
    def call(typingctx, address, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c,
             ldc):
        i64, f64 = types.int64, types.float64
        signature = types.void(i64, i64, i64, i64, i64, i64, f64, i64, i64, i64, i64, f64, i64,
                               i64)

        def codegen(context, builder, signature, args):
            (address, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) = args
            enum, integer = ir.IntType(32), ir.IntType(integer_bits)
            real = ir.DoubleType() if double else ir.FloatType()
            pointer = ir.IntType(8).as_pointer()
            function = ir.FunctionType(ir.VoidType(), [
                enum, enum, enum, integer, integer, integer, real, pointer, integer, pointer,
                integer, real, pointer, integer])

            def whole(value):
                return value if integer_bits == 64 else builder.trunc(value, integer)

            def scalar(value):
                return value if double else builder.fptrunc(value, real)
            builder.call(builder.inttoptr(address, function.as_pointer()), [
                ir.Constant(enum, ROW_MAJOR), builder.trunc(trans_a, enum),
                builder.trunc(trans_b, enum), whole(m), whole(n), whole(k), scalar(alpha),
                builder.inttoptr(a, pointer), whole(lda), builder.inttoptr(b, pointer),
                whole(ldb), scalar(beta), builder.inttoptr(c, pointer), whole(ldc)])
            return context.get_dummy_value()
        return signature, codegen
    return call


_sgemm64, _dgemm64 = _gemm(False, 64), _gemm(True, 64)
_sgemm32, _dgemm32 = _gemm(False, 32), _gemm(True, 32)


@njit(nogil=True, cache=True)
def bands_job(descriptor, part):
    """Bands from the shared counter until none is left; or, where the descriptor says
    ``DEALT`` (the warm-up's), band ``part`` only."""
    scales = descriptor[ALPHA:BETA + 1].view(np.float64)
    dealt = descriptor[DEALT] != 0
    while True:
        band = part if dealt else fetch_add(descriptor, NEXT)
        if band >= descriptor[BANDS]:
            return
        at = HEADER + RECORD * band
        arguments = (descriptor[ADDRESS], descriptor[TRANS_A], descriptor[TRANS_B],
                     descriptor[at + M], descriptor[at + N], descriptor[K], scales[0],
                     descriptor[at + A], descriptor[LDA], descriptor[at + B], descriptor[LDB],
                     scales[1], descriptor[at + C], descriptor[LDC])
        if descriptor[INTEGER_BITS] == 64:
            if descriptor[DOUBLE]:
                _dgemm64(*arguments)
            else:
                _sgemm64(*arguments)
        elif descriptor[DOUBLE]:
            _dgemm32(*arguments)
        else:
            _sgemm32(*arguments)
        if dealt:
            return


@njit(nogil=True, cache=True)
def serve(flags, part, turns):
    """A spin worker's loop over ``bands_job`` (``spin_workers.py``)."""
    while True:
        descriptor = next_job(flags, turns)
        if descriptor.size == 0:
            return False
        bands_job(descriptor, part)
        if job_done(flags):
            return True


helpers = SpinWorkers(bands_job, serve)
_warmed = (None, 0)         # (pid, threads whose BLAS buffers were brought to speed together)


def descriptor(out, a, b, axis, bounds, alpha, beta):
    """The int64 descriptor of ``out = alpha * a @ b + beta * out`` in ``bounds`` along
    ``axis`` (``blas.can_run(out, a, b)`` must hold): a copy of the layout's template with
    the arrays' addresses added (built in Python it cost 85 us a product, this 4). It holds
    addresses, not references: the arrays must outlive its last use."""
    key = (out.dtype.char, a.shape, a.strides, b.shape, b.strides, out.shape, out.strides,
           axis, bounds)
    template = _templates.get(key)
    if template is None:
        template = _templates[key] = _template(out, a, b, axis, bounds)
    job = template.copy()
    _place(job, a, b, out, alpha, beta)
    return job


def _template(out, a, b, axis, bounds):
    """A descriptor whose band records hold offsets (bytes) from the start of ``a``, ``b`` and
    ``out``, not addresses; and no ``alpha`` and ``beta``."""
    address, bits = blas.entry(out.dtype)
    (trans_a, lda), (trans_b, ldb), (_, ldc) = blas.layout(a), blas.layout(b), blas.layout(out)
    d = np.zeros(HEADER + RECORD * len(bounds), np.int64)
    d[:DEALT] = (address, bits, out.dtype == np.float64, 0, len(bounds), a.shape[1], trans_a,
                 trans_b, lda, ldb, ldc)
    m, n = out.shape
    for band, (start, stop) in enumerate(bounds):
        if axis == 0:
            record = (stop - start, n, start * a.strides[0], 0, start * out.strides[0])
        else:
            record = (m, stop - start, 0, start * b.strides[1], start * out.strides[1])
        d[HEADER + RECORD * band:HEADER + RECORD * (band + 1)] = record
    return d


_templates = {}             # layout and bands -> template (``_template``)


@njit(nogil=True, cache=True)
def _place(job, a, b, out, alpha, beta):
    """The arrays' addresses added to a template's offsets, ``alpha`` and ``beta`` put in."""
    for at in range(HEADER, job.size, RECORD):
        job[at + A] += a.ctypes.data
        job[at + B] += b.ctypes.data
        job[at + C] += out.ctypes.data
    scales = job[ALPHA:BETA + 1].view(np.float64)
    scales[0] = alpha
    scales[1] = beta


def run(out, a, b, axis, bounds, alpha, beta, threads):
    """``gemm_bands``'s band runner (``gemm_bands.use_band_runner``)."""
    job = descriptor(out, a, b, axis, bounds, alpha, beta)
    threads = max(1, min(threads, len(bounds)))
    chunk_workers.single_threaded_blas_begin()
    try:
        _warm_up(threads)
        helpers.run(job, threads)
    finally:
        chunk_workers.single_threaded_blas_end()


def _warm_up(threads):
    """A ``WARM_UP`` product on each of ``threads`` threads, band ``i`` dealt to thread ``i``,
    once per process and count (the module docstring says why). The products must overlap:
    OpenBLAS gives calls that run at the same time buffers of their own, so a helper whose
    product ran after the caller's (it was still loading its loop from numba's cache, 0.2 s)
    warmed the caller's buffer again, and its bands stayed 3x slower (``predict`` 1.5x): so
    twice, the second time with the helpers started and spinning. The bands themselves do not
    warm a buffer: they are 256 columns wide, and OpenBLAS's stayed slow below 384."""
    global _warmed
    pid, warmed = _warmed
    if pid == os.getpid() and threads <= warmed:
        return
    m, k, n = WARM_UP
    a = np.ones((m, k), np.float32)
    b = np.ones((k, n * threads), np.float32)
    out = np.empty((m, n * threads), np.float32)
    job = descriptor(out, a, b, 1, tuple((i * n, (i + 1) * n) for i in range(threads)), 1.0,
                     0.0)
    job[DEALT] = 1
    for _ in range(2):
        helpers.run(job, threads)
    _warmed = (os.getpid(), threads)
