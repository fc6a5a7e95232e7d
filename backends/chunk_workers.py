"""Work split into pieces on the thread budget, each piece with single-threaded BLAS: the
convolution forward's chunks, and the fixed bands of the GEMMs that BLAS's batched call cannot
take (``backends/gemm_bands.py``, ``backends/blas_batch.py``).

The im2col convolution works a few images at a time (``numpy_backend/im2col.py``). Handing
each chunk's GEMM to a 2-thread BLAS splits a small product (a few hundred microseconds) in
two, wakes the BLAS threads for every chunk (hiapi makes them sleep after each call, see
``hiapi.threads``) and alternates with numba's pool for the lowering in between. Running whole
chunks on the budget's threads instead (lowering + GEMM + col2im per thread, BLAS at one thread
meanwhile) is the batch-parallel scheme of oneDNN/PyTorch's CPU convolutions: measured on 2
cores, the 32x32x32 CIFAR layer's forward went from 12.1 to 9.2 ms (best of 15).

It also makes the result independent of the thread count: every chunk's GEMM is the same
single-threaded call whichever thread runs it, and the filter gradient's per-chunk products are
added in chunk order afterwards, so 1 and 2 threads give the same bits (a 2-thread BLAS GEMM
differs from a 1-thread one in the last bit).

Chunks are handed out from a shared counter, so on a busy machine a thread that the scheduler
left out simply takes fewer. The lowering passed to a worker must be serial (a numba
``parallel=True`` loop may not be launched from two threads at once on the workqueue layer).

Before the first job on a number of threads, every one of them runs one single-threaded product
at the same moment (``WARM_UP``), once per process. Why: numpy's OpenBLAS (0.3.31, its Haswell
kernels on an AMD EPYC Zen 1 VM) ran ``256x784 @ 784x256`` on one thread in 9 ms instead of 3,
call after call, on a BLAS buffer that had only served products at most 256 columns wide, and
at full speed for good once one product wider than 384 columns, of at least 64 rows and a
``k`` of 256, had run on that buffer (the kernel itself ran 3x longer: no system call, no page
fault; we did not find why). Threads calling BLAS at the same time seem to take buffers of
their own: after the calling thread alone had run a wide product, a second thread running
bands beside it stayed slow until one had run on both threads at once. So the MLP
784-1024-1024-10's step with the thread tuner on, all its products in 256-column bands, took
1.45x its time with the count fixed (issue #29). Warming costs about 4 ms once; on a BLAS
without the effect it changes nothing.
"""
import itertools
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from hiapi.runtime import threads

WARM_UP = (64, 512, 512)        # m, k, n of the product that brings a BLAS buffer to speed


class ChunkWorkers:
    """Runs ``job(task, slot)`` for a list of tasks on up to ``workers`` threads (the caller's
    thread included); ``slot`` is the worker's index, so each can own a scratch buffer."""

    def __init__(self):
        self._pool = None
        self._pid = None
        self._blas = None
        self._busy = threading.Lock()   # one parallel job at a time; others (nested) run serial
        self._single = threading.Lock()
        self._single_depth = 0
        self._saved = []
        self._warm = (None, 0)          # (pid, threads whose BLAS buffers were warmed at once)

    def count(self, tasks, capacity):
        """Workers for ``tasks`` chunks with scratch for ``capacity``: the threads the pools run
        with now (the budget, or fewer while fit's tuner adapts), 1 for a single chunk."""
        return max(1, min(threads.active_threads(), tasks, capacity))

    def run(self, tasks, job, workers):
        """Every job with single-threaded BLAS, on one thread or several: so a job's BLAS calls
        are the same whatever ``workers`` is (OpenBLAS's own threads would split them
        differently, and change their last bits)."""
        self.single_threaded_blas_begin()
        try:
            if workers <= 1 or len(tasks) <= 1 or not self._busy.acquire(blocking=False):
                self._warm_up(1)
                for task in tasks:
                    job(task, 0)
                return
            try:
                self._warm_up(min(workers, len(tasks)))
                self._run(tasks, job, min(workers, len(tasks)))
            finally:
                self._busy.release()
        finally:
            self.single_threaded_blas_end()

    def _run(self, tasks, job, workers):
        pool = self._executor(workers - 1)
        counter = itertools.count()
        futures = [pool.submit(_drain, tasks, counter, job, slot) for slot in range(1, workers)]
        try:
            _drain(tasks, counter, job, 0)
        finally:
            for future in futures:
                future.exception()          # every worker done before BLAS gets its threads back
        for future in futures:
            future.result()                 # a worker's exception, raised here

    def _warm_up(self, count):
        """``count`` threads (the caller and ``count - 1`` of the pool's) each run the
        ``WARM_UP`` product at the same moment, BLAS at one thread, so that each has a BLAS
        buffer of its own brought to speed (see the module docstring); once per process and
        count. The pool's threads only when the caller holds ``_busy``."""
        pid, warmed = self._warm
        if pid == os.getpid() and count <= warmed:
            return
        m, k, n = WARM_UP
        a, b = np.ones((m, k), np.float32), np.ones((k, n), np.float32)
        together = threading.Barrier(count)
        pool = self._executor(count - 1) if count > 1 else None
        futures = [pool.submit(warm_buffer, a, b, together) for _ in range(count - 1)]
        warm_buffer(a, b, together)
        for future in futures:
            future.result()
        self._warm = (os.getpid(), count)

    def single_threaded_blas_begin(self):
        """BLAS at one thread until the matching ``single_threaded_blas_end``; nests, and is
        safe from several threads (the count goes back when the last one ends). ~1 us."""
        with self._single:
            self._single_depth += 1
            if self._single_depth == 1:
                blas = self.blas_libraries()
                self._saved = [lib.num_threads for lib in blas]
                for lib, n in zip(blas, self._saved):
                    if n != 1:
                        lib.set_num_threads(1)

    def single_threaded_blas_end(self):
        with self._single:
            self._single_depth -= 1
            if self._single_depth == 0:
                for lib, n in zip(self.blas_libraries(), self._saved):
                    if n != 1:
                        lib.set_num_threads(n)

    def holds_blas_single_threaded(self):
        """Whether some thread is between ``single_threaded_blas_begin`` and ``_end`` now."""
        return self._single_depth > 0

    def _executor(self, size):
        # a forked child inherits the pool but not its threads: it starts its own
        if self._pool is None or self._pool._max_workers < size or self._pid != os.getpid():
            if self._pool is not None and self._pid == os.getpid():
                self._pool.shutdown(wait=False)         # a smaller one: its threads end
            self._pool = ThreadPoolExecutor(size, thread_name_prefix="hiapi-conv")
            self._pid = os.getpid()
        return self._pool

    def blas_libraries(self):
        """threadpoolctl's controllers of the loaded BLAS libraries (found on first use)."""
        if self._blas is None:
            from threadpoolctl import ThreadpoolController
            self._blas = ThreadpoolController().select(user_api="blas").lib_controllers
        return self._blas


def warm_buffer(a, b, together):
    """One ``WARM_UP`` product, started when every warming thread is ready (so that each
    holds a BLAS buffer of its own); if one is late, alone after a second."""
    try:
        together.wait(timeout=1.0)
    except threading.BrokenBarrierError:
        pass
    np.matmul(a, b)


def _drain(tasks, counter, job, slot):
    for index in counter:               # next() on itertools.count is atomic under the GIL
        if index >= len(tasks):
            return
        job(tasks[index], slot)


workers = ChunkWorkers()
