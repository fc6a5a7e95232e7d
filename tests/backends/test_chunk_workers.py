"""Convolution chunks spread over threads (``backends/chunk_workers.py``): every chunk runs once,
errors surface, BLAS gets its thread count back, and the forward convolution gives the same bits
on one thread as on two."""
import threading

import numpy as np
import pytest

from hiapi.backends import chunk_workers, gemm_bands
from hiapi.backends.chunk_workers import ChunkWorkers
from hiapi.backends.numpy_backend import im2col


def test_every_task_runs_once_on_its_own_slot():
    seen, lock = [], threading.Lock()

    def job(task, slot):
        with lock:
            seen.append((task, slot, threading.get_ident()))
    ChunkWorkers().run(list(range(40)), job, 2)
    assert sorted(t for t, _, _ in seen) == list(range(40))
    assert {s for _, s, _ in seen} <= {0, 1}
    by_slot = {}
    for _, slot, ident in seen:             # a slot (its scratch) belongs to one thread
        by_slot.setdefault(slot, set()).add(ident)
    assert all(len(idents) == 1 for idents in by_slot.values())


def test_a_workers_error_is_raised_and_blas_threads_are_restored():
    workers = ChunkWorkers()
    blas = workers.blas_libraries()
    before = [lib.num_threads for lib in blas]

    def job(task, slot):
        if task == 7:
            raise RuntimeError("chunk 7 failed")
    with pytest.raises(RuntimeError, match="chunk 7"):
        workers.run(list(range(12)), job, 2)
    assert [lib.num_threads for lib in blas] == before


def test_blas_is_single_threaded_inside_the_chunks():
    workers = ChunkWorkers()
    blas = workers.blas_libraries()
    if not blas:
        pytest.skip("no BLAS library that threadpoolctl controls")
    inside = []
    workers.run(list(range(4)), lambda task, slot: inside.append(blas[0].num_threads), 2)
    assert inside == [1, 1, 1, 1]
    inside.clear()          # run serially too: one piece, or one thread (the tuner's choice)
    workers.run([0], lambda task, slot: inside.append(blas[0].num_threads), 2)
    workers.run(list(range(3)), lambda task, slot: inside.append(blas[0].num_threads), 1)
    assert inside == [1, 1, 1, 1]


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("padding, strides", [("same", (1, 1)), ("valid", (2, 1))])
def test_forward_is_bitwise_the_same_on_one_and_two_threads(backend, padding, strides,
                                                            monkeypatch):
    if backend == "numba":
        pytest.importorskip("numba", reason="the numba extra is not installed")
        from hiapi.backends.numba_backend import backend as chosen
    else:
        from hiapi.backends.numpy_backend import backend as chosen
    rng = np.random.default_rng(3)
    x = rng.standard_normal((9, 12, 11, 5)).astype(np.float32)
    w = rng.standard_normal((3, 3, 5, 7)).astype(np.float32)
    conv = dict(strides=strides, padding=padding, dilation=(1, 1), groups=1)
    monkeypatch.setattr(im2col, "CHUNK_BYTES", 80000)       # a few images per chunk
    results, calls = [], []
    real_run = chunk_workers.workers.run

    def counting_run(tasks, job, workers):
        if job is not gemm_bands._band:           # a chunk's GEMM runs its own bands, serially
            calls.append(workers)
        return real_run(tasks, job, workers)
    monkeypatch.setattr(chunk_workers.workers, "run", counting_run)
    for threads in (1, 2):
        monkeypatch.setattr(chunk_workers.threads, "active_threads", lambda n=threads: n)
        monkeypatch.setattr(im2col.threads, "num_threads", lambda n=threads: n)
        out = np.empty((9, *_out_hw(x.shape[1:3], padding, strides), 7), np.float32)
        chosen.kernels["conv2d"](out, x, w, **conv)
        results.append(out)
    assert calls == [1, 2]                      # the second call did spread the chunks
    np.testing.assert_array_equal(results[0], results[1])


def _out_hw(hw, padding, strides):
    from hiapi.backends import conv_geometry as geo
    return tuple(geo.output_size(s, 3, st, 1, padding) for s, st in zip(hw, strides))


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_a_forked_child_gets_its_own_threads():
    import os
    workers = ChunkWorkers()
    workers.run(list(range(4)), lambda task, slot: None, 2)     # the parent's pool exists
    pid = os.fork()
    if pid == 0:                                                # child: must not hang
        done = []
        workers.run(list(range(6)), lambda task, slot: done.append(task), 2)
        os._exit(0 if sorted(done) == list(range(6)) else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0


def test_blas_buffers_are_warmed_once_per_thread_count_all_threads_at_once(monkeypatch):
    """Before the first job on n threads, n threads run the warm-up product together (each
    then holds a BLAS buffer of its own: ``WARM_UP`` in the module docstring), once."""
    calls, lock = [], threading.Lock()
    inside = threading.Barrier(2, timeout=5)
    original = chunk_workers.warm_buffer

    def warm(a, b, together):
        original(a, b, together)
        with lock:
            calls.append((threading.get_ident(), a.shape, b.shape))
        if together.parties == 2:
            inside.wait()       # both threads are warming at once, not one after the other
    monkeypatch.setattr(chunk_workers, "warm_buffer", warm)
    workers = ChunkWorkers()
    workers.run(list(range(4)), lambda task, slot: None, 2)
    m, k, n = chunk_workers.WARM_UP
    assert len(calls) == 2 and len({ident for ident, _, _ in calls}) == 2
    assert all((sa, sb) == ((m, k), (k, n)) for _, sa, sb in calls)
    workers.run(list(range(4)), lambda task, slot: None, 2)
    workers.run(list(range(4)), lambda task, slot: None, 1)     # one thread: warmed already
    assert len(calls) == 2
