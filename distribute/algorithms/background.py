"""Non-blocking calls of the Python allreduce algorithms: one thread per communicator runs them
in the order they were started.

MPI's ``Iallreduce`` returns at once and completes in ``Wait``; a Python algorithm has Python
between its messages, so it cannot be posted and left. ``iallreduce`` hands it to this thread
instead (MPI is initialised with ``MPI_THREAD_MULTIPLE`` by mpi4py) and ``wait()`` joins it, so
a bucket's allreduce runs while the main thread computes the rest of the backward pass; numpy
and mpi4py release the GIL for the heavy parts. One thread, first in first out, so every rank
runs the collectives in the same order (MPI requires it), on a duplicate communicator whose
messages never meet the main thread's. A blocking call first waits for what is queued, then
runs on the caller's thread (no hand-off cost). Without ``MPI_THREAD_MULTIPLE`` a non-blocking
call runs to completion when it is started.
"""
from concurrent.futures import ThreadPoolExecutor


class BackgroundRunner:
    def __init__(self, threads_allowed):
        self.threads_allowed = threads_allowed
        self._executor = None
        self._last = None

    def start(self, algorithm, array):
        """Begin ``algorithm(array)``; returns a function that waits for it to finish."""
        if not self.threads_allowed:
            algorithm(array)
            return lambda: None
        if self._executor is None:
            self._executor = ThreadPoolExecutor(1, thread_name_prefix="hiapi-allreduce")
        future = self._last = self._executor.submit(algorithm, array)
        return future.result

    def drain(self):
        """Wait for everything started so far."""
        if self._last is not None:
            self._last.result()
            self._last = None

    def settle(self):
        """``drain``, and wait until the thread has let go of the calls' arrays too: it drops a
        call's arguments only after its caller was told the call finished, so until a later
        item has run it may still hold them (a shared-memory window that looks in use)."""
        self.drain()
        if self._executor is not None:
            self._executor.submit(int).result()

    def run(self, algorithm, array):
        """``algorithm(array)`` now, after everything started before it."""
        self.drain()
        return algorithm(array)

    def close(self):
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None
