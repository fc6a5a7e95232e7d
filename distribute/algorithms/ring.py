"""The ring allreduce (``hiapi.distribute.ring``) behind the algorithm interface."""
from hiapi.distribute.algorithms.base import AllreduceAlgorithm
from hiapi.distribute.ring import ring_allreduce


class RingAllreduce(AllreduceAlgorithm):
    """2(P-1) steps of N/P bytes each: bandwidth-optimal, latency grows with P."""
    name = "ring"

    def __init__(self, comm, chunk_bytes=1 << 20):
        super().__init__(comm)
        self.chunk_bytes = chunk_bytes

    def __call__(self, array):
        return ring_allreduce(self.comm, array, self.chunk_bytes)

    def latency_steps(self, size):
        return 2 * (size - 1)

    def bandwidth_time(self, nbytes, costs, size):
        # 2(P-1)(alpha + n beta / P): the alphas are in the measured latency
        return 2 * (size - 1) * nbytes / size * costs.beta + \
            (size - 1) / size * nbytes * costs.gamma
