"""The communicator the rest of ``hiapi.distribute`` uses: collectives named as in MPI
(``allreduce``, ``allgather``, ``bcast``, ``barrier``), blocking and non-blocking.

``MPICommunicator`` wraps mpi4py: MPI's native allreduce, or one of
``hiapi.distribute.algorithms`` (``algorithm="ring"``, ``"halving_doubling"``,
``"shared_memory"``, ``"shared_direct"``, ``"zero_copy"``, ``"hierarchical"``, or ``"auto"``: per message-size
class, the fastest of native and the model's best three, timed on first use; a non-blocking call
of a Python algorithm runs on a background thread); ``LocalCommunicator`` is the one-process stand-in used when the script is
not started under ``mpiexec`` (or mpi4py is not installed), so the same script runs either way.

With more than one rank, the ``MPICommunicator`` makes the job fail loudly instead of hanging:
an uncaught exception on any rank aborts the job (``abort.py``), and a collective that waits
longer than ``HIAPI_COLLECTIVE_TIMEOUT`` seconds aborts it with a report of the ranks that did
not arrive (``watchdog.py``).
"""
import numpy as np

from hiapi.runtime import environment
from hiapi.distribute.abort import abort_job, install_abort_on_uncaught_exception
from hiapi.distribute.algorithms import check_name, make_algorithm
from hiapi.distribute.algorithms.background import BackgroundRunner
from hiapi.distribute.watchdog import describe, watchdog_for


class Request:
    """A pending non-blocking collective; ``wait()`` completes it and returns its result."""

    def __init__(self, wait, result):
        self._wait, self._result, self._done = wait, result, False

    def wait(self):
        if not self._done:
            self._wait()
            self._done = True
        return self._result


class Communicator:
    rank, size = 0, 1

    def allreduce(self, array):
        """Elementwise sum over ranks, in place; returns ``array``."""
        raise NotImplementedError

    def iallreduce(self, array):
        raise NotImplementedError

    def ireduce(self, array, root):
        """Non-blocking sum over ranks into ``array`` on ``root`` only (the others' ``array``
        is just sent); ``wait()`` returns ``array``."""
        raise NotImplementedError

    def allgather(self, array):
        """Concatenation of every rank's 1-D ``array`` (sizes may differ), and the sizes."""
        raise NotImplementedError

    def bcast(self, array, root=0):
        raise NotImplementedError

    def barrier(self):
        pass

    def shared_array(self, count, dtype):
        """A 1-D array in memory the allreduce reads in place (``algorithm="zero_copy"``, or
        ``"auto"`` on one node: MPI shared memory), for a buffer that is reduced again and
        again (a gradient bucket); None where the caller's own memory is as good. Collective:
        every rank allocates the same sizes in the same order."""
        return None

    def release_shared(self):
        """Free the ``shared_array`` arrays nothing uses any more (no array of the process views
        them: a recompiled model's old gradient buckets); returns how many. Collective: every
        rank calls it at the same point (``Strategy`` does before building a step's buckets)."""
        return 0

    def set_progress(self, text):
        """Where training is (``"epoch 2, batch 5"``), for the stall report."""

    def allreduce_scalars(self, values):
        """Sum of a few host numbers over ranks (float64)."""
        return self.allreduce(np.asarray(values, dtype=np.float64).copy())

    def abort(self, code=1):
        raise SystemExit(code)


class LocalCommunicator(Communicator):
    """One process: every collective is the identity."""

    def allreduce(self, array):
        return array

    def iallreduce(self, array):
        return Request(lambda: None, array)

    def ireduce(self, array, root):
        return Request(lambda: None, array)

    def allgather(self, array):
        return np.array(array, copy=True), [len(array)]

    def bcast(self, array, root=0):
        return array


class MPICommunicator(Communicator):
    def __init__(self, comm=None, algorithm="native"):
        from mpi4py import MPI
        self.MPI = MPI
        self.comm = comm or MPI.COMM_WORLD
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()
        self.algorithm = check_name(algorithm)
        if self.size > 1:
            install_abort_on_uncaught_exception(self.comm)
        self.watchdog = watchdog_for(self.comm, environment.collective_timeout())
        # a Python algorithm gets its own duplicate communicator (used from its thread)
        self.allreducer = make_algorithm(algorithm, self.comm.Dup(), self.comm) \
            if algorithm != "native" else None
        self.background = BackgroundRunner(MPI.Query_thread() == MPI.THREAD_MULTIPLE)

    def _run(self, what, array, collective, *args):
        """Run a blocking collective under the watchdog's eye."""
        watchdog = self.watchdog
        if watchdog is None:
            return collective(*args)
        watchdog.enter(what, array)
        try:
            return collective(*args)
        finally:
            watchdog.current = None

    def shared_array(self, count, dtype):
        if self.allreducer is None:
            return None
        self.background.drain()              # the allocation is collective, as the calls are
        return self.allreducer.allocate(count, dtype)

    def release_shared(self):
        if self.allreducer is None:
            return 0
        self.background.settle()             # freeing is collective, and nothing in flight
        if self.watchdog is not None:
            self.watchdog.forget_arrays()
        return self.allreducer.release_unused()

    def set_progress(self, text):
        if self.watchdog is not None:
            self.watchdog.progress = text

    def _algorithm_for(self, nbytes):
        """The algorithm reducing ``nbytes`` bytes (None: MPI's own). A size ``auto`` has not
        met yet is tuned first (a collective) after what is queued on the background thread,
        so the tuning's calls never run beside a queued allreduce."""
        allreducer = self.allreducer
        if allreducer is None:
            return None
        chosen = allreducer.picked(nbytes)
        if chosen is None:
            self.background.drain()
            chosen = allreducer.choose(nbytes)
        return chosen

    def allreduce(self, array):
        chosen = self._algorithm_for(array.nbytes)
        if chosen and chosen.threaded:
            self._run(f"{chosen.name} allreduce", array, self.background.run, chosen, array)
            return array
        watchdog = self.watchdog
        if watchdog is None:
            self.comm.Allreduce(self.MPI.IN_PLACE, array, self.MPI.SUM)
            return array
        watchdog.started += 1                  # Watchdog.enter, inlined (a hot path)
        watchdog.last = watchdog.current = (watchdog.started, "allreduce", array,
                                            watchdog.progress)
        try:
            self.comm.Allreduce(self.MPI.IN_PLACE, array, self.MPI.SUM)
        finally:
            watchdog.current = None
        return array

    def iallreduce(self, array):
        chosen = self._algorithm_for(array.nbytes)
        if chosen and chosen.threaded:        # a Python algorithm: on the background thread
            name, finish = f"{chosen.name} iallreduce", self.background.start(chosen, array)
        else:
            name = "iallreduce"
            finish = self.comm.Iallreduce(self.MPI.IN_PLACE, array, op=self.MPI.SUM).Wait
        watchdog = self.watchdog
        if watchdog is None:
            return Request(finish, array)
        watchdog.started += 1                  # posted now, waited for (watched) later
        number = watchdog.started
        watchdog.last = (number, name, array, watchdog.progress)

        def wait():
            watchdog.current = (number, f"wait for {name}", array, watchdog.progress)
            try:
                finish()
            finally:
                watchdog.current = None
        return Request(wait, array)

    def ireduce(self, array, root):
        MPI = self.MPI
        if self.rank == root:
            request = self.comm.Ireduce(MPI.IN_PLACE, array, op=MPI.SUM, root=root)
        else:
            request = self.comm.Ireduce(array, None, op=MPI.SUM, root=root)
        watchdog = self.watchdog
        if watchdog is None:
            return Request(request.Wait, array)
        watchdog.started += 1
        number = watchdog.started
        what = f"wait for ireduce to rank {root}"
        watchdog.last = (number, f"ireduce to rank {root}", array, watchdog.progress)

        def wait():
            watchdog.current = (number, what, array, watchdog.progress)
            try:
                request.Wait()
            finally:
                watchdog.current = None
        return Request(wait, array)

    def allgather(self, array):
        array = np.ascontiguousarray(array)
        sizes = self._run("allgather (sizes)", None, self.comm.allgather, len(array))
        out = np.empty(sum(sizes), array.dtype)
        self._run("allgather", array, self.comm.Allgatherv, array, [out, sizes])
        return out, sizes

    def bcast(self, array, root=0):
        self._run(f"bcast from rank {root}", array, self.comm.Bcast, array, root)
        return array

    def barrier(self):
        self._run("barrier", None, self.comm.Barrier)

    def abort(self, code=1):
        abort_job(self.comm, code)


def world(algorithm="native"):
    """MPI's world communicator when running under an MPI launcher, else a local one."""
    check_name(algorithm)
    try:
        from mpi4py import MPI
    except ImportError:
        return LocalCommunicator()
    if MPI.COMM_WORLD.Get_size() == 1:         # every algorithm is the identity on one rank
        return LocalCommunicator()
    return MPICommunicator(MPI.COMM_WORLD, algorithm)
