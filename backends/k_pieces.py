"""A matrix product cut along its summed dimension ``k``: pieces that BLAS computes with the same
bits on every thread count, each whole on BLAS's own threads, the later ones adding to the
first's result (BLAS's ``beta = 1``). Used where ``backends/threaded_blocks.py`` (whole on more
than one thread, the threaded driver's blocks on one: no second call there) found no blocks.

Why: a product whose bits follow the thread count (``backends/thread_invariance.py``) ran in
the fixed bands of ``backends/gemm_bands.py``, and bands cost: each is a single-threaded BLAS
call that packs the other operand again. OpenBLAS's count-dependent bits come from how it cuts
``k`` into blocks, and it cuts a short ``k`` the same way on any count; so the product cut
along ``k`` into such pieces gets the same bits on every count and runs on BLAS's own threads.
Measured on the 2-core VM (OpenBLAS 0.3.31, SkylakeX, 2 threads): ``256x784 @ 784x1024``, the
first layer of issue #29's MLP and the one product of its step that is not invariant whole,
took 1.64-1.76 ms whole, 1.76-1.87 ms as 512 + 272, and 1.99-2.09 ms in 4 bands. The pieces
cost an extra pass over ``out`` each, not a packing of an operand.

Which pieces: as few as possible, and powers of two first (blocks of a power-of-two length are
what BLAS builds cut ``k`` into): ``k`` itself was found to depend on the count, so it is cut
into the largest power of two below it and the rest, and any piece that depends on the count
is cut the same way again, up to ``MAX_PIECES``. Nothing here assumes which lengths a BLAS
cuts alike: every piece is checked once, as a whole product is (random operands of its shape
and layout, on every count the tuner may choose), the first with the caller's ``beta``, the
others adding. When no cut passes, the product goes to the bands. The cut and its checks are
kept per shape and layout for the life of the process, as the whole product's verdict is.
"""
from itertools import accumulate

from hiapi.backends import thread_invariance

MAX_PIECES = 4
MIN_PIECE = 16           # no piece shorter: a pass over ``out`` for too little work
_cuts = {}               # thread_invariance's key of (a, b, first beta) -> bounds, or None


def known(a, b, beta):
    """The cut of ``a @ b`` along ``k`` found earlier: bounds, None (no cut passed), or
    ``False`` when not searched yet."""
    return _cuts.get(thread_invariance.key(a, b, beta != 0), False)


def cut(out, a, b, beta, product, libraries):
    """``((start, stop), ...)`` along ``k`` such that ``product`` over each piece (the first
    with ``beta``, the others with 1: adding) gives the same bits on every thread count, or
    None. ``product(out, a_part, b_part, beta)``: ``out = scale * a_part @ b_part + beta *
    out``. Searched once per shape and layout (see the module docstring)."""
    found = thread_invariance.key(a, b, beta != 0)
    if found not in _cuts:
        _cuts[found] = _search(out, a, b, beta, product, libraries)
    return _cuts[found]


def run(out, a, b, bounds, piece, beta):
    """``piece`` over each of ``bounds`` along ``k``, the first with ``beta``, the later ones
    adding to ``out``."""
    for index, (start, stop) in enumerate(bounds):
        piece(out, a[:, start:stop], b[start:stop], beta if index == 0 else 1.0)


def _search(out, a, b, beta, product, libraries):
    sizes = _halved(a.shape[1])
    while sizes is not None and len(sizes) <= MAX_PIECES:
        bounds = _bounds(sizes)
        failing = next((i for i, piece in enumerate(bounds)
                        if not _invariant(out, a, b, piece, beta if i == 0 else 1.0, product,
                                          libraries)), None)
        if failing is None:
            return bounds
        parts = _halved(sizes[failing])
        if parts is None:
            return None
        sizes[failing:failing + 1] = parts
    return None


def _halved(size):
    """``size`` as the largest power of two below it and the rest, or None when a piece
    would be shorter than ``MIN_PIECE``."""
    head = 1 << ((size - 1).bit_length() - 1) if size > 1 else 0
    if head < MIN_PIECE or size - head < MIN_PIECE:
        return None
    return [head, size - head]


def _bounds(sizes):
    stops = list(accumulate(sizes))
    return tuple(zip([0] + stops[:-1], stops))


def _invariant(out, a, b, piece, beta, product, libraries):
    start, stop = piece
    return thread_invariance.invariant(
        out, a[:, start:stop], b[start:stop],
        lambda part, a_part, b_part: product(part, a_part, b_part, beta), libraries,
        kind=beta != 0)
