"""Which matrix products BLAS computes with the same bits on every thread count: checked once
per product shape, so those run whole on BLAS's own threads and only the others in fixed bands.

Why: the thread tuner may change the thread count between two steps, and a seeded run's
weights must not follow the timing, so every product whose bits depend on the count runs in
the fixed bands of ``backends/gemm_bands.py``. But the bands cost: each is a single-threaded
BLAS call that packs the other operand again, and two of them run side by side slower than
OpenBLAS's own two threads sharing one packed panel. Measured on this project's 2-core machine
(OpenBLAS 0.3.31, SkylakeX): ``256x1024 @ 1024x1024`` took 1.98 ms whole on 2 threads and 2.47
ms in 4 bands; the MLP 784-1024-1024-10 step took 12.8 ms with the count fixed and 14.2-15.0
ms with the tuner on, almost all of it the bands (issue #29's 1.05x target).

And most products do not need them. OpenBLAS splits a product between threads along its rows
and columns, never along the summed dimension ``k``; what changes the bits is how it cuts
``k`` into blocks, and its threaded driver rounds that cut differently from its serial one
only for some ``k`` (on this machine: 1 and 2 threads differ where ``k`` is above 448 and
not a multiple of 32, such as MNIST's 784; ``k`` = 256, 1024 or 10 never differ). Which
``k`` those are depends on the BLAS build and the CPU (the same numpy wheel on an AMD EPYC
Zen 1 VM runs OpenBLAS's Haswell kernels, and there 1 and 2 threads gave other bits for every
float32 product of the 784-1024-1024-10 MLP, ``k`` = 10 and 1024 included: all of them run
in bands there), so nothing here assumes them: the first
time a product of a shape and layout runs while the count may change, ``invariant`` runs it
on random operands of that shape and layout with every thread count the tuner may choose,
and compares the bits. Equal: from then on that product runs whole, on however many threads
the tuner chose (same bits, full speed). Different: in bands. Random operands, because the
user's may hide a difference (zeros, or a batch of one value); with random ones a different
``k`` blocking changed most elements (52,192 of 65,536 in ``128x784 @ 784x512``), while the
same blocking computes every element by the same operations, so equal bits once mean equal
bits for all operands. (``backends/threaded_blocks.py`` and ``backends/k_pieces.py`` check
their blocks and pieces the same way, with ``random_operands`` and ``agreed``.)

The check costs the product a few times, once per shape and layout for the life of the
process; it runs only where the count is free to change (``gemm_bands.enable``) and never
from inside a worker that holds BLAS at one thread (another worker's BLAS call would see the
count it sets): such a call runs in bands, and asks again next time.
"""
import contextlib

import numpy as np

from hiapi.backends import blas
from hiapi.runtime import thread_tuner, threads

# (dtype, a's shape and strides, b's shape and strides) -> same bits on every count. Strides,
# not a layout read from them: the key is then a few attribute reads, cheap enough to ask at
# every product (a step's operands keep their shapes and strides from call to call)
_verdicts = {}


def known(a, b, kind=None):
    """The verdict for ``a @ b``'s shape and layout: True, False, or None (not checked yet)."""
    return _verdicts.get(key(a, b, kind))


def key(a, b, kind=None):
    """What a verdict is kept under: dtype, both operands' shapes and strides, ``kind``."""
    return a.dtype.char, a.shape, a.strides, b.shape, b.strides, kind


def invariant(out, a, b, product, libraries, kind=None):
    """Whether ``product(out, a, b)`` gives the same bits on every thread count the tuner may
    choose (checked on random operands the first time; see the module docstring).
    ``libraries``: threadpoolctl's controllers of the loaded BLAS libraries (the counts are
    set on them). ``kind``: what else than the shapes and layouts tells two products apart
    (``backends/k_pieces.py``: a piece that adds to what ``out`` holds)."""
    found = key(a, b, kind)
    verdict = _verdicts.get(found)
    if verdict is None:
        verdict = _verdicts[found] = _check(out, a, b, product, libraries)
    return verdict


def _check(out, a, b, product, libraries):
    if not checkable(a, b, libraries):
        return a.dtype.kind != "f"      # integers: numpy's own loop, one thread; else bands
    a_, b_, start = random_operands(out, a, b)
    return agreed(counts(), libraries, start, lambda result: product(result, a_, b_)) is not None


def agreed(counts, libraries, start, run):
    """``run(result)`` on a copy of ``start`` with BLAS at each of ``counts`` threads: the
    result when they all have the same bits, else None."""
    results = []
    for count in counts:
        with _blas_count(libraries, count):
            result = start.copy()
            run(result)
        results.append(result)
    same = all(np.array_equal(results[0], other) for other in results[1:])
    return results[0] if same else None


def checkable(a, b, libraries):
    """Whether ``a @ b``'s bits can be compared across counts: floats in 2-D that BLAS reads
    as they are, and a BLAS whose count threadpoolctl sets."""
    return a.dtype.kind == "f" and a.ndim == 2 and b.ndim == 2 and bool(libraries) and \
        blas.layout(a) is not None and blas.layout(b) is not None


def random_operands(out, a, b):
    """Random ``a``, ``b`` of the operands' shapes, dtypes and layouts, and a random start
    for ``out`` (a product with ``beta`` reads it): the same every call."""
    rng = np.random.default_rng(0)
    a_, b_ = _random_like(a, rng), _random_like(b, rng)
    return a_, b_, rng.standard_normal(out.shape).astype(out.dtype)


@contextlib.contextmanager
def _blas_count(libraries, count):
    """BLAS at ``count`` threads inside, its counts as they were after."""
    saved = [lib.num_threads for lib in libraries]
    try:
        for lib in libraries:
            lib.set_num_threads(count)
        yield
    finally:
        for lib, before in zip(libraries, saved):
            lib.set_num_threads(before)


def counts():
    """The counts the tuner may choose (``thread_tuner.candidates``), and always 1 and the
    whole budget."""
    budget = threads.budget().threads
    return sorted(set(thread_tuner.candidates(budget)) | {1, budget})


def _random_like(x, rng):
    """Random values with ``x``'s shape, dtype and order as BLAS reads it (a transposed view
    stays one)."""
    if blas.layout(x)[0] == blas.TRANS:
        return rng.standard_normal(x.shape[::-1]).astype(x.dtype).T
    return rng.standard_normal(x.shape).astype(x.dtype)
