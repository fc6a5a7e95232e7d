"""MPI's own allreduce (``MPI_Allreduce``): the reference every other algorithm is measured
against, and the one ``auto`` keeps for small messages, where its C loop has no Python cost."""
from hiapi.distribute.algorithms.base import AllreduceAlgorithm


class NativeAllreduce(AllreduceAlgorithm):
    name = "native"
    threaded = False          # MPI_Iallreduce is non-blocking by itself

    def __init__(self, comm):
        super().__init__(comm)
        from mpi4py import MPI
        self.MPI = MPI

    def __call__(self, array):
        self.comm.Allreduce(self.MPI.IN_PLACE, array, self.MPI.SUM)
        return array

    def start(self, array):
        """The non-blocking form: an MPI request whose ``Wait`` completes the sum."""
        return self.comm.Iallreduce(self.MPI.IN_PLACE, array, op=self.MPI.SUM)

    def bandwidth_time(self, nbytes, costs, size):
        # MPICH: reduce-scatter + allgather (Rabenseifner) beyond a few KB
        share = (size - 1) / size * nbytes
        return 2 * share * costs.beta + share * costs.gamma
