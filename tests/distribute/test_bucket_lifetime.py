"""Shared-memory gradient buckets are freed once nothing can use them (issues #12, #19):
compiling and fitting again and again under ``zero_copy`` or ``auto`` (recompiling,
fine-tuning, new models) keeps the process's shared memory bounded, training still equals one
process on the global batch, and a window still viewed is never freed (``close`` refuses with
a clear error). The tables every allocator shares are guarded by a lock, checked from threads."""
import json
import threading
import time

import numpy as np
import pytest

import hiapi

from mpi import run_mpi

ROUNDS = 9                      # three of each: recompile, fine-tune, a new model


@pytest.mark.parametrize("ranks, algorithm", [(2, "zero_copy"), (4, "zero_copy"), (2, "auto"),
                                               (4, "auto")])
def test_compile_and_fit_again_and_again_keeps_shared_memory_bounded(tmp_path, ranks,
                                                                     algorithm):
    from test_mpi import single_process_weights
    run_mpi(ranks, "bucket_lifetime.py", tmp_path, algorithm, ROUNDS, timeout=400)
    reference, history = single_process_weights(25 * ranks,
                                                hiapi.optimizers.SGD(0.1, momentum=0.9))
    for rank in range(ranks):
        log = json.load(open(tmp_path / f"lifetime_{rank}.json"))
        records = log["records"]
        # every later round holds what the same kind of round held the first time: the 0.8 MB
        # of buckets a round allocates (P segments mapped) would otherwise pile up (without
        # freeing, 2 ranks: 3 to 16 windows and 7.8 to 15.7 MB mapped over the nine rounds)
        for index, later in enumerate(records[3:], 3):
            first = records[index % 3]
            assert later["live"] == first["live"], (rank, records)
            assert later["mapped"] == first["mapped"], (rank, records)
            # resident shared memory also creeps as MPI's own pool is touched (up to 0.3 MB
            # seen on 4 ranks); without freeing it grew by 6 MB over the rounds on 2 ranks
            assert later["rss"] <= first["rss"] + (800 << 10), (rank, records)
        assert max(r["live"] for r in records) <= 3, records       # 2 buckets + the scratch
        assert log["freed"] >= log["allocated"] - 3, log              # the others were freed
        weights = np.load(tmp_path / f"weights_{rank}.npz")
        for i, expected in enumerate(reference):
            np.testing.assert_allclose(weights[f"arr_{i}"], expected, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(log["history"]["loss"], history["loss"], rtol=1e-4)


def test_window_tables_are_read_and_written_under_one_lock():
    """The tables every allocator of the process shares are read by ``find`` on a
    communicator's background thread (the overlapped bucket allreduce) while another
    communicator may allocate or free on the main thread: a lookup and an allocation both wait
    while another thread holds the tables' lock, and complete once it is released."""
    MPI = pytest.importorskip("mpi4py.MPI")
    from hiapi.distribute.algorithms import window_arrays
    if MPI.Query_thread() != MPI.THREAD_MULTIPLE:
        pytest.skip("MPI without MPI_THREAD_MULTIPLE")
    arrays = window_arrays.WindowArrays(MPI.COMM_SELF.Dup())
    array = arrays.allocate(1000, np.float32)
    done = {}
    workers = [threading.Thread(target=lambda: done.setdefault("find", arrays.find(array[3:9]))),
               threading.Thread(target=lambda: done.setdefault(
                   "allocate", arrays.allocate(10, np.float32)))]
    with window_arrays._lock:
        for worker in workers:
            worker.start()
        time.sleep(0.3)
        assert not done, f"{sorted(done)} ran while another thread held the tables' lock"
    for worker in workers:
        worker.join(timeout=30)
    peers, _ = done["find"]
    assert peers[0].ctypes.data == array[3:9].ctypes.data
    assert arrays.find(done["allocate"]) is not None
    del array, peers, done
    arrays.close()                   # every array dropped: all freed
