"""The communicator the rest of ``hiapi.distribute`` uses: collectives named as in MPI
(``allreduce``, ``allgather``, ``bcast``, ``barrier``), blocking and non-blocking.

``MPICommunicator`` wraps mpi4py (MPI's native algorithms, or our ring allreduce with
``algorithm="ring"``); ``LocalCommunicator`` is the one-process stand-in used when the script is
not started under ``mpiexec`` (or mpi4py is not installed), so the same script runs either way.
"""
import numpy as np


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

    def allgather(self, array):
        """Concatenation of every rank's 1-D ``array`` (sizes may differ), and the sizes."""
        raise NotImplementedError

    def bcast(self, array, root=0):
        raise NotImplementedError

    def barrier(self):
        pass

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
        if algorithm not in ("native", "ring"):
            raise ValueError(f"algorithm must be 'native' or 'ring', got {algorithm!r}")
        self.algorithm = algorithm

    def allreduce(self, array):
        if self.algorithm == "ring":
            from hiapi.distribute.ring import ring_allreduce
            return ring_allreduce(self.comm, array)
        self.comm.Allreduce(self.MPI.IN_PLACE, array, op=self.MPI.SUM)
        return array

    def iallreduce(self, array):
        if self.algorithm == "ring":          # the ring is blocking: done when it returns
            return Request(lambda: None, self.allreduce(array))
        request = self.comm.Iallreduce(self.MPI.IN_PLACE, array, op=self.MPI.SUM)
        return Request(request.Wait, array)

    def allgather(self, array):
        array = np.ascontiguousarray(array)
        sizes = self.comm.allgather(len(array))
        out = np.empty(sum(sizes), array.dtype)
        self.comm.Allgatherv(array, [out, sizes])
        return out, sizes

    def bcast(self, array, root=0):
        self.comm.Bcast(array, root=root)
        return array

    def barrier(self):
        self.comm.Barrier()

    def abort(self, code=1):
        self.comm.Abort(code)


def world(algorithm="native"):
    """MPI's world communicator when running under an MPI launcher, else a local one."""
    try:
        from mpi4py import MPI
    except ImportError:
        return LocalCommunicator()
    if MPI.COMM_WORLD.Get_size() == 1 and algorithm == "native":
        return LocalCommunicator()
    return MPICommunicator(MPI.COMM_WORLD, algorithm)
