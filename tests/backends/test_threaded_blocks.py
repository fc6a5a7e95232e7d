"""A product whose bits follow the thread count runs whole on more than one thread and, on one,
as the blocks of ``k`` its threaded driver sums (``backends/threaded_blocks.py``): the same
bits on every count. Checked against a fake BLAS that cuts ``k`` as OpenBLAS's two drivers do,
so that the test does not depend on the build's block size."""
import numpy as np
import pytest

from hiapi.backends import (blas_batch, chunk_workers, gemm_bands, k_pieces, thread_invariance,
                            threaded_blocks)
from hiapi.runtime import threads

UNROLL = 16


def _blocks(k, q, threaded):
    """OpenBLAS's ``ls`` loop: blocks of ``q`` while ``2 q`` remain, then the rest halved (the
    threaded driver) or its half rounded up to the kernel's unroll (the serial one)."""
    sizes, left = [], k
    while left > 0:
        size = left
        if size >= 2 * q:
            size = q
        elif size > q:
            size = (size + 1) // 2 if threaded else -(-(size // 2) // UNROLL) * UNROLL
        sizes.append(size)
        left -= size
    return sizes


def exact_block(a, b):
    """A block's product whose bits depend on nothing but its operands: in float64, rounded
    to float32 (a real BLAS may also change bits with the count within a block: OpenBLAS's
    Haswell kernels on an AMD EPYC do for every ``k``, where its SkylakeX ones do only through
    the cut of ``k``; the fake stands for the second kind)."""
    return (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)


def _fake_blas(q):
    """``out = a @ b + beta * out`` summed block by block along ``k`` as a BLAS of block size
    ``q`` does at the thread count BLAS is set to now (float32: another cut, other bits)."""
    def gemm(out, a, b, beta=0.0):
        threaded = chunk_workers.workers.blas_libraries()[0].num_threads > 1
        total = np.zeros(out.shape, np.float32) if beta == 0 else np.float32(beta) * out
        start = 0
        for size in _blocks(a.shape[1], q, threaded):
            total = total + exact_block(a[:, start:start + size], b[start:start + size])
            start += size
        out[...] = total
    return gemm


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    """Nothing found before; BLAS's count as it was after; a budget of two threads."""
    libraries = chunk_workers.workers.blas_libraries()
    if not libraries:
        pytest.skip("no BLAS library that threadpoolctl controls")
    for module, table in ((thread_invariance, "_verdicts"), (k_pieces, "_cuts"),
                          (threaded_blocks, "_found"), (gemm_bands, "_routes")):
        monkeypatch.setattr(module, table, {})
    monkeypatch.setattr(threads, "budget", lambda: threads.Budget(2, 2, 1, "test"))
    monkeypatch.setattr(gemm_bands, "_enabled", True)
    saved = [lib.num_threads for lib in libraries]
    yield
    for lib, count in zip(libraries, saved):
        lib.set_num_threads(count)


def _run_on(count, q, a, b, monkeypatch, beta=0.0, start=None):
    """``gemm_bands.run`` of the fake BLAS's product with BLAS at ``count`` threads; returns the
    result and how the product ran: ``whole``, ``pieces`` of k, or in ``bands``."""
    for lib in chunk_workers.workers.blas_libraries():
        lib.set_num_threads(count)
    gemm = _fake_blas(q)
    ran = []
    monkeypatch.setattr(chunk_workers.ChunkWorkers, "run",
                        lambda self, tasks, job, workers: ran.append("bands"))
    monkeypatch.setattr(blas_batch, "prepare", lambda *args: None)     # the fake has none
    out = np.zeros((a.shape[0], b.shape[1]), np.float32) if start is None else start.copy()
    gemm_bands.run(out, a, b, lambda o, a_, b_: (ran.append("whole"), gemm(o, a_, b_, beta)),
                   lambda o, a_, b_, part_beta: (ran.append("piece"), gemm(o, a_, b_, part_beta)),
                   beta)
    return out, ran


def _operands(k, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((256, k)).astype(np.float32),
            rng.standard_normal((k, 512)).astype(np.float32))


@pytest.mark.parametrize("k, q, bounds", [
    (784, 384, ((0, 384), (384, 584), (584, 784))),
    (784, 512, ((0, 392), (392, 784))),
    (784, 256, ((0, 512), (512, 648), (648, 784))),
    (2000, 384, ((0, 1536), (1536, 1768), (1768, 2000))),
    (300, 384, None),                    # nothing left between Q and 2Q: the drivers agree
    (1024, 512, None)])
def test_the_threaded_drivers_blocks(k, q, bounds):
    assert threaded_blocks.threaded_bounds(k, q) == bounds
    if bounds:
        assert [stop - start for start, stop in bounds][-2:] == _blocks(k, q, True)[-2:]


@pytest.mark.parametrize("q", [384, 512, 256])
def test_whole_on_two_threads_and_in_the_threaded_blocks_on_one_give_the_same_bits(
        q, monkeypatch):
    a, b = _operands(784)
    one, ran_one = _run_on(1, q, a, b, monkeypatch)
    two, ran_two = _run_on(2, q, a, b, monkeypatch)
    blocks = threaded_blocks.threaded_bounds(784, q)
    assert thread_invariance.known(a, b) is False           # the fake's bits follow the count
    assert threaded_blocks.known(a, b, 0.0) == blocks
    assert ran_two[-1:] == ["whole"] and ran_one[-len(blocks):] == ["piece"] * len(blocks)
    np.testing.assert_array_equal(one, two)
    np.testing.assert_allclose(one, a @ b, rtol=1e-4, atol=1e-3)


def test_the_first_block_keeps_the_callers_beta_and_the_others_add(monkeypatch):
    """The ``gemm`` op's ``a @ b + beta * c`` as blocks on one thread: the formula holds, and
    the bits are the whole product's on two."""
    a, b = _operands(784, seed=1)
    c = np.random.default_rng(2).standard_normal((256, 512)).astype(np.float32)
    one, _ = _run_on(1, 384, a, b, monkeypatch, beta=0.9, start=c)
    two, _ = _run_on(2, 384, a, b, monkeypatch, beta=0.9, start=c)
    assert threaded_blocks.known(a, b, 0.9) == threaded_blocks.threaded_bounds(784, 384)
    np.testing.assert_array_equal(one, two)
    np.testing.assert_allclose(one, a @ b + 0.9 * c, rtol=1e-4, atol=1e-3)


def test_a_block_size_no_candidate_gives_falls_back_to_the_cut_along_k(monkeypatch):
    """A BLAS whose blocks none of the usual sizes reproduces: cut along k, as before (the
    fake's 512 + 272 are each a single block there, on any count)."""
    a, b = _operands(784, seed=3)
    one, ran_one = _run_on(1, 300, a, b, monkeypatch)
    two, ran_two = _run_on(2, 300, a, b, monkeypatch)
    assert threaded_blocks.known(a, b, 0.0) is None
    assert k_pieces.known(a, b, 0.0) == ((0, 512), (512, 784))
    assert ran_one[-2:] == ran_two[-2:] == ["piece", "piece"]
    np.testing.assert_array_equal(one, two)


def test_counts_above_one_that_disagree_are_not_replayed(monkeypatch):
    """Whole on 2 and 4 threads with different bits: no count's bits to replay on one."""
    monkeypatch.setattr(threads, "budget", lambda: threads.Budget(4, 4, 1, "test"))

    def product(out, a, b):
        out[...] = a @ b + np.float32(1e-6) * chunk_workers.workers.blas_libraries()[0].num_threads
    a, b = _operands(784, seed=4)
    libraries = chunk_workers.workers.blas_libraries()
    assert threaded_blocks.blocks(np.empty((256, 512), np.float32), a, b, 0.0, product,
                                  lambda o, a_, b_, beta: product(o, a_, b_), libraries) is None


def test_a_layouts_route_is_decided_once_and_follows_blas_count_after(monkeypatch):
    """After the first call, a product in the threaded driver's blocks goes straight to its
    route (``gemm_bands._routes``): whole while BLAS has two threads, the blocks on one,
    with the same bits; no check runs again."""
    a, b = _operands(784, seed=3)
    decided = []
    real = gemm_bands._decide
    monkeypatch.setattr(gemm_bands, "_decide", lambda *args: decided.append(1) or real(*args))
    two, ran_two = _run_on(2, 512, a, b, monkeypatch)
    again, ran_again = _run_on(2, 512, a, b, monkeypatch)
    one, ran_one = _run_on(1, 512, a, b, monkeypatch)
    assert decided == [1]
    assert ran_again == ["whole"] and ran_one == ["piece", "piece"]
    np.testing.assert_array_equal(two, again)
    np.testing.assert_array_equal(two, one)


def test_no_search_along_k_where_a_short_k_already_changes_bits(monkeypatch):
    """A BLAS whose bits follow the count even for a ``k`` that neither driver cuts (its
    threads' split of rows and columns changes them): no blocks or cuts are searched, the
    product goes to the bands; one whose short products agree is searched as before."""
    searched = []
    monkeypatch.setattr(threaded_blocks, "blocks", lambda *args: searched.append("blocks"))
    monkeypatch.setattr(k_pieces, "cut", lambda *args: searched.append("cut"))
    a, b = _operands(784, seed=5)
    _, ran = _run_on(2, 384, a, b, monkeypatch)         # the fake: short k keeps its bits
    assert searched == ["blocks", "cut"] and ran[-1:] == ["bands"]
    short = gemm_bands.SHORT_K
    assert thread_invariance.known(a[:, :short], b[:short], gemm_bands.SHORT) is True

    def split_dependent(out, a_, b_):
        out[...] = exact_block(a_, b_) + np.float32(1e-6) * \
            chunk_workers.workers.blas_libraries()[0].num_threads
    searched.clear()
    for module, table in ((gemm_bands, "_routes"), (thread_invariance, "_verdicts")):
        monkeypatch.setattr(module, table, {})
    monkeypatch.setattr(chunk_workers.ChunkWorkers, "run",
                        lambda self, tasks, job, workers: searched.append("bands"))
    out = np.zeros((256, 512), np.float32)
    gemm_bands.run(out, a, b, split_dependent, lambda o, a_, b_, beta: split_dependent(o, a_, b_))
    assert searched == ["bands"]
    assert thread_invariance.known(a[:, :short], b[:short], gemm_bands.SHORT) is False
