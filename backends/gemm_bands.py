"""Matrix products whose bits do not depend on the thread count.

Why: OpenBLAS splits a GEMM differently for 1 and 2 threads, and the last bit of some elements
changes with the split (measured on this machine's OpenBLAS 0.3.31, SkylakeX kernels: in
``(128x784) @ (784x512)``, the first Dense layer of ``examples/mnist_mlp.py``, 52,414 of the
65,536 elements differ between 1 and 2 threads). A seeded run's weights would then depend on
how many threads ran, so the thread tuner (``hiapi.runtime.thread_tuner``), which changes the count
with the load, had to stay off in seeded runs: almost every Keras script.

So hiapi splits the product itself, the way the convolution forward already does
(``backends/chunk_workers.py``): the output is cut into bands of rows or of columns whose
boundaries come from the shape alone (``band_plan``), every band is one single-threaded BLAS
call, and hiapi's threads take the bands from a shared counter. Each output element is then
computed by the same BLAS call whatever the number of threads that ran them, so 1 and 2
threads give the same bits (tested, ``tests/backends/test_gemm_bands.py``). Whether a band's
elements equal those of the whole product does not matter, and is not always so: OpenBLAS's
small-matrix kernels take over for bands like ``64x1024 @ 1024x10`` and sum in another order.

Only where the count can change: the bands start when the thread tuner first adapts in this
process (``enable``, registered with ``thread_tuner.when_adapting``: a step of a model is
called, or ``fit``/``evaluate``/``predict`` starts, with a count hiapi chose) and stay on from
then (the count the tuner left may differ from the budget), in unseeded runs too: a run
resumed from a file in a new process repeats bit for bit without a seed of its own (the
weights and the batch order's seed travel in the file), so whether a run is meant to repeat
cannot be read from ``set_random_seed`` alone (tried and reverted: docs/performance.md, the
ninth round).

With the count fixed -- ``HIAPI_NUM_THREADS``, ``set_num_threads``, one thread per rank under
``mpiexec`` -- OpenBLAS splits every product the same way on every call, so its own threads
are deterministic too, and they are faster: no operand packed again per band, and every core
of a large machine (the bands cap one product at ``MAX_BANDS``, and a 1024-wide one at 4).
Whether the bands are on depends only on what the script has run, never on timing.

Only the products that need them: a product that BLAS computes with the same bits on every
thread count the tuner may choose (most are: OpenBLAS cuts only some ``k`` differently on
different counts, MNIST's 784 among them) runs whole on BLAS's own threads, at full speed;
``backends/thread_invariance.py`` checks that once per shape and layout, on random operands.
On the MLP 784-1024-1024-10 that left one product of seven in bands and brought ``fit`` with
the tuner on from 1.17x to within a few per cent of the count fixed (issue #29). And most
of the others need no bands either. Their bits differ only between one thread and more
(OpenBLAS's serial and threaded drivers cut ``k`` differently; every count above one alike),
so they run whole whenever BLAS has more than one thread, and on one as the blocks of ``k``
the threaded driver sums, each a call of its own adding to the output
(``backends/threaded_blocks.py``: 784 = 392 + 392 here): the count fixed's speed, except on
one thread. Where no such blocks reproduce the threaded driver (another BLAS), they are cut
along ``k`` into pieces that are invariant (``backends/k_pieces.py``: 784 = 512 + 272), each
whole on BLAS's threads, the later ones adding, at the cost of a pass over the output per
piece, not a packing per band. Bands are left for what neither serves: products with leading
dimensions, integers, layouts BLAS cannot read as they are, and a BLAS that no cut satisfies.

Where every product needs them (OpenBLAS's Haswell kernels on an AMD EPYC Zen 1: see
``backends/thread_invariance.py``), the bands cost about what OpenBLAS's own two threads do
(``256x784 @ 784x1024`` in four bands on two threads 6.2-6.3 ms, whole 6.1-6.6), once the
workers' BLAS buffers are warm (``backends/chunk_workers.py``: before that, 9-10 ms). On the
chunk workers they cost more in a step: 0.25 ms a product of handing the bands to a pool
thread (a futex wake-up), setting BLAS to one thread and back, and Python's futures, 5-9 % of
a batch-256 ``predict``; and a product too narrow for two 256-wide bands ran on one thread,
which made batch 32's step 1.3x its time with the count fixed. So a BLAS ``gemm`` (given
``piece``) runs its bands in one call of OpenBLAS's batched GEMM instead
(``backends/blas_batch.py``): each band is still one serial BLAS call, with the same bits,
but on BLAS's own threads and their hand-over, and then a side of 64 to 511 rows or columns
is worth cutting in two (``NARROW_BAND``). The chunk workers keep the bands BLAS cannot take
that way (integers, leading dimensions, layouts it cannot read). What was decided for a
layout is kept (``_routes``), with its prepared batched call. Handing the bands to helpers
that spin between jobs instead (numba ``nogil`` loops calling ``cblas_sgemm``, as the dense
chain's do) saved 3 % of that ``predict`` on a quiet machine and doubled the step under load
(docs/performance.md, the eighth round): not kept.

The cost against OpenBLAS's own threads is that each band packs the other operand again:
bands are therefore wide (``MIN_BAND`` rows or columns, or the narrow side in two halves),
their number a power of two (equal work on 2 or 4 threads), and a product too small to share
(``MIN_SPLIT_FLOPS``) runs whole on the calling thread. Products with leading (batch)
dimensions are split along the first one instead, each matrix whole.
"""
from functools import lru_cache

import numpy as np

from hiapi.backends import blas, blas_batch, k_pieces, thread_invariance, threaded_blocks
from hiapi.backends.chunk_workers import workers
from hiapi.runtime import thread_tuner, threads

MIN_BAND = 256              # rows or columns per band, at least (a multiple of 16: BLAS tiles)
NARROW_BAND = 32            # ... except that a side of 64 to 511 is cut in two
MAX_BANDS = 16
MIN_SPLIT_FLOPS = 2 << 20   # below ~20 us of one core's work a dispatch costs more than it wins
_enabled = False            # set for good by the thread tuner: see the module docstring
# ``_layout`` -> (kind, detail): the route ``run`` decided for it (``_decide``)
_routes = {}
WHOLE, BLOCKS, CUT, BANDS = "whole", "threaded blocks", "cut along k", "bands"
SHORT_K = 16                # the shortest piece ``k_pieces`` tries: one block in both drivers
SHORT = "short k"           # what ``thread_invariance`` keeps that check under
BATCHED = "batched bands"   # ... and the check of the bands' batched call


def enable():
    """Products that keep their bits on any thread count (``run``) from now on in this
    process: the thread count may change."""
    global _enabled
    _enabled = True


def enabled():
    return _enabled


thread_tuner.when_adapting(enable)     # from then on the count changes no bit


def _power_of_two_at_most(n):
    return 1 << (max(1, int(n)).bit_length() - 1)


@lru_cache(maxsize=1024)
def band_plan(m, n, k):
    """How ``(m, k) @ (k, n)`` is cut: ``(axis, bounds)``, bands of output rows (axis 0) or
    columns (axis 1) as (start, stop) pairs. From the shape only: never the thread count.
    The longer side is cut, so the operand each band packs again is the smaller one."""
    axis = 0 if m > n else 1
    side = (m, n)[axis]
    # no band narrower than MIN_BAND, nor with less than MIN_SPLIT_FLOPS of work
    wide = max(side // MIN_BAND, 2 if side >= 2 * NARROW_BAND else 1)
    count = _power_of_two_at_most(min(MAX_BANDS, wide, 2 * m * n * k // MIN_SPLIT_FLOPS))
    size = -(-side // count)
    size = -(-size // 16) * 16
    return axis, tuple((start, min(start + size, side)) for start in range(0, side, size))


@lru_cache(maxsize=1024)
def batch_plan(out_shape, k):
    """Groups of the first leading dimension of a batched product (each matrix is whole in
    one group), as (start, stop) pairs; from the shape only."""
    batch, (m, n) = out_shape[0], out_shape[-2:]
    inner = int(np.prod(out_shape[1:-2], dtype=np.int64))
    flops = 2 * inner * m * n * k
    count = min(MAX_BANDS, batch, flops // MIN_SPLIT_FLOPS)
    count = _power_of_two_at_most(count)
    size = -(-batch // count)
    return tuple((start, min(start + size, batch)) for start in range(0, batch, size))


def _pieces(out, a, b):
    """(a part, b part, out part) per piece of ``out = a @ b``."""
    k = a.shape[-1]
    if out.ndim == 2:
        axis, bounds = band_plan(out.shape[0], out.shape[1], k)
        if axis == 0:
            return [(a[i:j], b, out[i:j]) for i, j in bounds]
        return [(a, b[:, i:j], out[:, i:j]) for i, j in bounds]
    # align the operands' leading dimensions with the output's (a view: leading ones)
    a = a.reshape((1,) * (out.ndim - a.ndim) + a.shape)
    b = b.reshape((1,) * (out.ndim - b.ndim) + b.shape)
    return [(a if a.shape[0] == 1 else a[i:j], b if b.shape[0] == 1 else b[i:j], out[i:j])
            for i, j in batch_plan(out.shape, k)]


def _band(piece, slot):
    a, b, out, product = piece
    product(out, a, b)


def _matmul(out, a, b):
    np.matmul(a, b, out=out)


def _blas_piece(out, a, b, beta):
    blas.gemm(out, a, b, 1.0, beta)


def run(out, a, b, product, piece=None, beta=0.0, alpha=1.0):
    """``product(out, a, b)`` (``out`` of ``a @ b``'s shape), the same bits on any number of
    threads once ``enable`` ran: whole on BLAS's own threads where that was checked to change
    no bit (``backends/thread_invariance.py``); else, given ``piece`` and a product large
    enough for more than one band (float operands in 2-D that BLAS reads as they are), whole
    on more than one thread and in the threaded driver's blocks of ``k`` on one where those
    were found (``backends/threaded_blocks.py``), or cut along ``k`` where each piece keeps
    its bits (``backends/k_pieces.py``); else in the fixed bands, BLAS at one thread, on the
    threads fit runs with now.
    ``piece(out, a_part, b_part, beta)``: ``product`` over a piece of ``k`` with the given
    ``beta`` (``beta`` and ``alpha`` are ``product``'s own: the ``gemm`` op's,
    ``backends/numpy_backend/gemm_kernel.py``; a later piece adds with 1). Given ``piece``,
    the bands are one call of BLAS's batched GEMM with ``alpha`` and ``beta``
    (``backends/blas_batch.py``)."""
    if not _enabled:
        product(out, a, b)          # BLAS's own threads: the count is fixed
        return
    # what was decided for this layout, without deciding again: a step's products keep their
    # shapes and strides from call to call, and deciding cost ~45 us a product
    key = _layout(out, a, b, piece, beta)
    route = _routes.get(key)
    # only the whole route depends on sharing (numpy may take another BLAS routine for an
    # array times its own transpose); the others are followed as kept
    if route is None or (route[0] == WHOLE and np.may_share_memory(a, b)):
        final = _final(a, b)
        route = _decide(out, a, b, product, piece, beta)
        if final and _final(a, b):              # no worker held BLAS before or after
            _routes[key] = route
    _follow(route, out, a, b, product, piece, beta, alpha)


def _layout(out, a, b, piece, beta):
    """What a route is kept under: the operands' dtype, shapes and strides, the output's
    strides, whether ``beta`` adds and whether there is a ``piece``."""
    return (a.dtype.char, a.shape, a.strides, b.shape, b.strides, out.strides, beta != 0,
            piece is None)


def _final(a, b):
    """Whether a route decided now holds for every later call of the same layout: not for
    operands that share memory (a product of an array with its own transpose is never taken
    whole, one of other arrays of that layout may be), nor one decided while a worker held
    BLAS at one thread (the checks that set BLAS's count were put off to a later call)."""
    return not np.may_share_memory(a, b) and not workers.holds_blas_single_threaded()


def _follow(route, out, a, b, product, piece, beta, alpha):
    """The product along its route: whole on BLAS's threads (``WHOLE``, or ``BLOCKS`` while
    BLAS has more than one thread: their bits), the threaded driver's blocks or a cut along
    ``k`` (``k_pieces.run``), or the fixed bands (one batched BLAS call, or the chunk
    workers)."""
    kind, detail = route            # the blocks or cut's bounds; the bands' batched call
    if kind == WHOLE or (kind == BLOCKS and _blas_threads() > 1):
        product(out, a, b)
    elif kind == BANDS:
        if detail is not None:
            detail(out, a, b, alpha, beta)      # a blas_batch.Batch
        else:
            _bands(out, a, b, product)
    else:
        k_pieces.run(out, a, b, detail, piece, beta)


def _decide(out, a, b, product, piece, beta):
    """``run``'s checks in full: the route to follow, ``(WHOLE, None)``, ``(BLOCKS, bounds)``
    or ``(CUT, bounds)`` along ``k``, or ``(BANDS, batch)`` (``_in_bands``)."""
    if _whole_is_invariant(out, a, b, product):
        return WHOLE, None
    one_band = out.ndim == 2 and len(band_plan(out.shape[0], out.shape[1], a.shape[-1])[1]) == 1
    # too small to share (under MIN_SPLIT_FLOPS, or a side under 2 * NARROW_BAND): whole on
    # one thread beats two BLAS calls on two (cut along k, batch 32's first layer made fit's
    # step 7 % slower when it was one band)
    if piece is None or one_band:
        return _in_bands(out, a, b, piece)
    blocks = _along_k(
        out, a, b, beta, product, threaded_blocks,
        lambda libraries: threaded_blocks.blocks(out, a, b, beta, product, piece, libraries))
    if blocks is not None:
        return BLOCKS, blocks
    bounds = _along_k(
        out, a, b, beta, product, k_pieces,
        lambda libraries: k_pieces.cut(out, a, b, beta, piece, libraries))
    if bounds is not None:
        return CUT, bounds
    return _in_bands(out, a, b, piece)


def _in_bands(out, a, b, piece):
    """The bands' route: ``(BANDS, batch)``, where ``batch`` runs them in one call of BLAS's
    batched GEMM on BLAS's own threads, each band serial (``backends/blas_batch.py``: the
    chunk workers' bits without their hand-over), or ``(BANDS, None)`` for the chunk workers
    (no ``piece``: the product is not a BLAS ``gemm``; leading dimensions; operands BLAS
    cannot read; bands too small). From the layout alone, never the thread count: the
    batched call and a single one may take different kernels for a small band."""
    batch = None
    if piece is not None and out.ndim == 2:
        batch = blas_batch.prepare(out, a, b, *band_plan(*out.shape, a.shape[1]))
    if batch is not None and not _batch_is_invariant(out, a, b):
        batch = None
    return BANDS, batch


def _batch_is_invariant(out, a, b):
    """Whether the batched call gives this product the same bits on every thread count:
    OpenBLAS's batch driver runs each band with its serial driver, but that is its code, not
    its contract (another BLAS's batch, or a later OpenBLAS's, may split a band over threads),
    so it is checked once per shape and layout, as a whole product is
    (``backends/thread_invariance.py``). Not from inside a worker that holds BLAS at one
    thread (the check sets BLAS's count for everyone): the chunk workers run the bands this
    time, and the route is not kept (``_final``)."""
    verdict = thread_invariance.known(a, b, kind=BATCHED)
    if verdict is None:
        if workers.holds_blas_single_threaded():
            return False
        plan = band_plan(*out.shape, a.shape[1])
        verdict = thread_invariance.invariant(       # on random operands of their own layout
            out, a, b, lambda out_, a_, b_: blas_batch.prepare(out_, a_, b_, *plan)(out_, a_, b_),
            workers.blas_libraries(), kind=BATCHED)
    return verdict


def _bands(out, a, b, product):
    """The product in the fixed bands, on the threads fit runs with now: each band one
    single-threaded BLAS call."""
    pieces = [part + (product,) for part in _pieces(out, a, b)]
    if len(pieces) == 1 and threads.active_threads() == 1:
        product(out, a, b)          # one band, BLAS already at one thread: nothing to set
        return
    workers.run(pieces, _band, workers.count(len(pieces), len(pieces)))


def _blas_threads():
    """The threads BLAS runs a call on now (a worker may hold it at one; 0.4 us to ask)."""
    return min(lib.num_threads for lib in workers.blas_libraries())


def _along_k(out, a, b, beta, product, module, search):
    """What ``module`` (``threaded_blocks`` or ``k_pieces``) found along ``k`` for this
    product's shape and layout, searched the first time by ``search(libraries)``; None for
    operands BLAS cannot take as they are, and not searched from inside a worker that holds
    BLAS at one thread (the search sets BLAS's count for everyone, as ``_whole_is_invariant``'s
    check does), nor where no cut can help (``_cuts_can_help``)."""
    if not blas.can_run(out, a, b):
        return None
    found = module.known(a, b, beta)
    if found is False:
        if workers.holds_blas_single_threaded():
            return None             # in bands this time; searched on a later call
        if not _cuts_can_help(out, a, b, product):
            return None
        found = search(workers.blas_libraries())
    return found


def _cuts_can_help(out, a, b, product):
    """Whether a cut along ``k`` could give this product the same bits on every count: not
    when the product of its first ``SHORT_K`` columns of ``a`` and rows of ``b``, cut by
    neither of OpenBLAS's drivers, already changes bits with the count. Then the threads'
    split of the rows and columns changes them (OpenBLAS's Haswell kernels on an AMD EPYC),
    and searching the threaded driver's blocks and the cuts along ``k`` only costs: 0.8 s of
    the first ``fit`` of the MLP 784-1024-1024-10 there, for nothing found. Checked once per
    shape and layout, as ``thread_invariance`` checks a whole product."""
    return thread_invariance.invariant(out, a[:, :SHORT_K], b[:SHORT_K], product,
                                       workers.blas_libraries(), kind=SHORT)


def _whole_is_invariant(out, a, b, product):
    """Whether this 2-D product gives the same bits whole on any thread count
    (``backends/thread_invariance.py``: checked once per shape and layout). Not checked from
    inside a worker that holds BLAS at one thread: the check sets BLAS's count for everyone."""
    if out.ndim != 2 or np.may_share_memory(a, b):
        return False
    verdict = thread_invariance.known(a, b)
    if verdict is None:
        if workers.holds_blas_single_threaded():
            return False            # in bands this time; checked on a later call
        verdict = thread_invariance.invariant(out, a, b, product, workers.blas_libraries())
    return verdict


def matmul(out, a, b):
    """``out[...] = a @ b`` (numpy's ``matmul``, leading dimensions broadcast) as ``run``
    computes it: the same bits on any number of threads (once ``enable`` ran; before,
    numpy's ``matmul`` whole).

        out = np.empty((128, 512), np.float32)
        matmul(out, x, w)        # == x @ w, bit for bit the same on 1 or 2 threads
    """
    if out.size == 0 or not _enabled:
        np.matmul(a, b, out=out)
        return
    run(out, a, b, _matmul, _blas_piece)
