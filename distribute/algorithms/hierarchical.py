"""Hierarchical allreduce for several ranks per node (as Horovod's and NCCL's two-level ones).

Inside each node the ranks reduce through shared memory (``shared_memory``'s copy-in and
sliced sum), the node's leader (its first rank) gathers the node's sum in its slot, the
leaders allreduce across nodes with MPI, and every rank of the node copies the result out of
the leader's slot. Only one rank per node touches the network, with the whole vector, so the
inter-node traffic is that of P/ranks_per_node ranks instead of P.

``ranks_per_node`` groups consecutive ranks into pretend nodes (for tests on one machine);
by default the nodes are the real ones (``COMM_TYPE_SHARED``).
"""
from hiapi.distribute.algorithms.base import AllreduceAlgorithm, flat_view, steps
from hiapi.distribute.algorithms.shared_memory import reduce_own_slice
from hiapi.distribute.algorithms.shared_window import SharedSlots, node_communicator
from hiapi.distribute.ring import segment_bounds

# large chunks: each one is also an MPI allreduce between the node leaders (not measured on
# more than one node yet, so the inter-node latency per chunk is kept rare)
DEFAULT_CHUNK_BYTES = 16 << 20


class HierarchicalAllreduce(AllreduceAlgorithm):
    name = "hierarchical"

    def __init__(self, comm, ranks_per_node=None, chunk_bytes=DEFAULT_CHUNK_BYTES):
        super().__init__(comm)
        from mpi4py import MPI
        self.MPI = MPI
        node = node_communicator(comm, ranks_per_node)
        self.local_rank, self.local_size = node.Get_rank(), node.Get_size()
        leaders = comm.Split(0 if self.local_rank == 0 else MPI.UNDEFINED, comm.Get_rank())
        self.leaders = leaders if leaders != MPI.COMM_NULL else None
        self.nodes = self.leaders.Get_size() if self.leaders else None
        # what predict() uses must be the same on every rank (auto's pick depends on it)
        self.largest_node = comm.allreduce(self.local_size, MPI.MAX)
        self.node_count = comm.allreduce(int(self.local_rank == 0), MPI.SUM)
        self.shared = SharedSlots(node, chunk_bytes)

    def __call__(self, array):
        if self.size == 1:
            return array
        flat, shared, me = flat_view(array, "hierarchical"), self.shared, self.local_rank
        step = shared.reserve(flat.nbytes) // flat.itemsize
        for start in range(0, len(flat), step):
            part = flat[start:start + step]
            n = len(part)
            slots = shared.slots(flat.dtype)
            slots[me][:n] = part
            shared.fence()
            bounds = segment_bounds(n, self.local_size)
            reduce_own_slice(slots, me, bounds)
            shared.fence()
            if me == 0:
                total = slots[0][:n]
                for other in range(1, self.local_size):
                    lo, hi = bounds[other], bounds[other + 1]
                    total[lo:hi] = slots[other][lo:hi]
                if self.nodes > 1:
                    self.leaders.Allreduce(self.MPI.IN_PLACE, total, self.MPI.SUM)
            shared.fence()
            part[:] = slots[0][:n]
            shared.advance()
        return array

    def _nodes(self, size):
        return self.node_count if size == self.size else max(size // self.largest_node, 1)

    def latency_steps(self, size):
        return 3 + 2 * steps(self._nodes(size))

    def bandwidth_time(self, nbytes, costs, size):
        local, nodes = self.largest_node, self._nodes(size)
        more_chunks = max(0, -(-nbytes // self.shared.max_chunk_bytes) - 1)
        inside = more_chunks * 3 * costs.barrier + (2 + (local - 1) / local) * nbytes * \
            costs.copy + (local - 1) / local * nbytes * costs.gamma
        share = (nodes - 1) / nodes * nbytes
        return inside + 2 * share * costs.beta + share * costs.gamma
