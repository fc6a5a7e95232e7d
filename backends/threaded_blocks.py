"""A product whose bits follow the thread count, run whole on BLAS's threads when it has more
than one, and on one thread as the blocks of ``k`` that BLAS's threaded driver sums: the
threaded driver's bits on every count, at full speed where the tuner leaves two threads or more.

Why: such a product (``backends/thread_invariance.py``) was cut along ``k`` into pieces that
each keep their bits (``backends/k_pieces.py``), at the cost of a second BLAS call on BLAS's
threads: they are woken again and the output is passed over again. On issue #29's MLP at batch
256 that was 1.08x the first layer's product whole and about 4 % of an ``evaluate`` batch, the
one pattern still slower than torch's. But the tuner runs two threads or more almost all the
time on a quiet machine, and the whole product on any count above one already has one set of
bits: only one thread computes others.

Where the bits differ: OpenBLAS's serial and threaded drivers cut ``k`` alike into blocks of
its ``GEMM_Q`` while at least ``2 * Q`` remain, and differently what is left when it is
between ``Q`` and ``2 * Q``: the threaded driver halves it (``(r + 1) / 2``), the serial one
rounds the half up to its kernel's unroll (MNIST's ``k`` = 784 on this VM's SkylakeX
kernels, whose ``Q`` is above 448: 392 + 392 on two threads, 400 + 384 on one). Each block's
sum goes into the output in turn, computed by the same kernel on any count. So on one thread
the product computed as those blocks, each a BLAS call of its own (a block of at most ``Q``,
which the serial driver cuts no further, or the whole blocks of ``Q`` in front, which it cuts
alike), the later ones adding to the output (``beta = 1``), has the threaded driver's bits.

Nothing here assumes ``Q``, which a build does not expose: the blocks that each of the usual
``Q`` (``CANDIDATE_Q``) would give are tried in turn, once per shape and layout, on random
operands as ``thread_invariance`` does: the whole product on every count above one must agree,
and the blocks on one thread must equal it. The first that does is kept for the life of the
process; when none does (another BLAS), the caller cuts along ``k`` or runs in bands as before.
The blocks cost on one thread only, a pass over the output and a packing per block: 0.17-0.19
ms more than the 3 ms of ``256x784 @ 784x1024`` whole on one thread, on this VM.
"""
import numpy as np

from hiapi.backends import k_pieces, thread_invariance

# GEMM_Q of OpenBLAS's kernels for single and double precision (param.h), most common first
CANDIDATE_Q = (384, 448, 512, 256, 320, 192, 640, 128, 768)
_found = {}          # thread_invariance's key of (a, b, first beta) -> bounds, or None


def known(a, b, beta):
    """The blocks found for ``a @ b`` earlier: bounds, None (none reproduced the threaded
    driver), or ``False`` when not searched yet."""
    return _found.get(thread_invariance.key(a, b, beta != 0), False)


def blocks(out, a, b, beta, product, piece, libraries):
    """``((start, stop), ...)`` along ``k`` such that ``piece`` over each on one thread (the
    first with ``beta``, the others adding) gives the bits of ``product(out, a, b)`` whole on
    any count above one, or None. ``piece(out, a_part, b_part, beta)``: ``out = scale *
    a_part @ b_part + beta * out``. Searched once per shape and layout."""
    found = thread_invariance.key(a, b, beta != 0)
    if found not in _found:
        _found[found] = _search(out, a, b, beta, product, piece, libraries)
    return _found[found]


def threaded_bounds(k, q):
    """The blocks OpenBLAS's threaded driver sums ``k`` in for a given ``Q``, as (start, stop)
    pairs, the whole blocks of ``Q`` in front joined into one (the serial driver cuts them
    alike); None when no block is left between ``Q`` and ``2 * Q`` (both drivers cut ``k``
    alike: nothing to replay)."""
    head = 0
    while k - head >= 2 * q:
        head += q
    rest = k - head
    if rest <= q:
        return None
    half = (rest + 1) // 2
    stops = [stop for stop in (head, head + half, k) if stop > 0]
    return tuple(zip([0] + stops[:-1], stops))


def _search(out, a, b, beta, product, piece, libraries):
    counts = [count for count in thread_invariance.counts() if count > 1]
    if not counts or not thread_invariance.checkable(a, b, libraries):
        return None
    a_, b_, start = thread_invariance.random_operands(out, a, b)
    whole = thread_invariance.agreed(counts, libraries, start,
                                     lambda result: product(result, a_, b_))
    if whole is None:
        return None
    tried = set()
    for q in CANDIDATE_Q:
        bounds = threaded_bounds(a.shape[1], q)
        if bounds is None or bounds in tried:
            continue
        tried.add(bounds)
        one = thread_invariance.agreed([1], libraries, start, lambda result:
                                       k_pieces.run(result, a_, b_, bounds, piece, beta))
        if np.array_equal(one, whole):
            return bounds
    return None
