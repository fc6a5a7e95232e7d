"""Double-buffered slots in MPI shared memory, one per rank of a node.

``MPI.Win.Allocate_shared`` over a communicator whose ranks share memory gives each rank a
segment that every other rank maps too, so a plain numpy read of another rank's slot is a load
from the same physical pages: no message, no second copy. Each rank's segment holds two slots;
the algorithms alternate between them chunk after chunk, so the barrier that ends one chunk's
copy-in also proves every rank has finished reading the slot used two chunks ago, and a chunk
needs no extra barrier before it is overwritten.

Every chunk costs one to three fences, and on a loaded machine a fence costs far more than
its idle microsecond: a rank that arrives first and spins takes a core from the rank it is
waiting for. So ``fence()`` is a ``FlagFence``: counters in shared memory polled with
``sched_yield`` (1.1 us a fence on two ranks where ``Ibarrier`` polled with ``Test`` took
2.3 us, load 5.6), with the ``Win.Sync`` memory barriers the MPI-3 shared-memory model requires
for loads and stores to be seen by the other processes. The slots are as large as the messages
need, up to ``max_chunk_bytes`` (the algorithm's choice: small enough that the slots stay in
cache, few enough chunks that the fences stay rare); they grow on the first larger message
(every rank sees the same sizes, so they grow together).
"""
import numpy as np

from hiapi.distribute.algorithms.flag_fence import FlagFence

MIN_CHUNK_BYTES = 64 << 10


class SharedSlots:
    def __init__(self, node_comm, max_chunk_bytes):
        if max_chunk_bytes < MIN_CHUNK_BYTES or max_chunk_bytes % 64:
            raise ValueError(f"SharedSlots: max_chunk_bytes must be a multiple of 64 and at "
                             f"least {MIN_CHUNK_BYTES}, got {max_chunk_bytes}")
        self.comm, self.max_chunk_bytes = node_comm, max_chunk_bytes
        self.rank, self.size = node_comm.Get_rank(), node_comm.Get_size()
        self.window, self.chunk_bytes = None, 0
        self.fence = FlagFence(node_comm)
        self._allocate(MIN_CHUNK_BYTES)

    def _allocate(self, chunk_bytes):
        from mpi4py import MPI
        if self.window is not None:
            self.close()
        self.window = MPI.Win.Allocate_shared(2 * chunk_bytes, 1, comm=self.comm)
        self.window.Lock_all(MPI.MODE_NOCHECK)
        self.segments = [np.frombuffer(self.window.Shared_query(r)[0], np.uint8,
                                       count=2 * chunk_bytes) for r in range(self.size)]
        self.segments[self.rank].fill(0)          # fault the pages in now, not in a timed call
        self.chunk_bytes, self.turn, self._views = chunk_bytes, 0, {}

    def reserve(self, nbytes):
        """Grow the slots (collectively) toward ``nbytes``, up to ``max_chunk_bytes``; returns
        the chunk size in bytes."""
        if nbytes > self.chunk_bytes < self.max_chunk_bytes:
            self.fence()                          # nobody still reads the old slots
            size = 1 << max(nbytes - 1, 1).bit_length()
            self._allocate(min(self.max_chunk_bytes, size))
        return self.chunk_bytes

    def slots(self, dtype):
        """Every rank's current slot as a 1-D ``dtype`` array of ``chunk_bytes`` bytes."""
        key = (dtype, self.turn)
        views = self._views.get(key)
        if views is None:
            start = self.turn * self.chunk_bytes
            views = self._views[key] = [
                segment[start:start + self.chunk_bytes].view(dtype) for segment in self.segments]
        return views

    def advance(self):
        """Move to the other slot for the next chunk."""
        self.turn ^= 1

    def close(self):
        self.segments, self._views = [], {}
        self.window.Unlock_all()
        self.window.Free()
        self.window = None


def node_communicator(comm, ranks_per_node=None):
    """The ranks of ``comm`` that share this machine's memory (``COMM_TYPE_SHARED``), in
    ``comm``'s order. ``ranks_per_node`` cuts them further into groups of that many
    consecutive ranks: pretend nodes, so a hierarchical algorithm can be tested on one machine."""
    from mpi4py import MPI
    node = comm.Split_type(MPI.COMM_TYPE_SHARED, key=comm.Get_rank())
    if ranks_per_node:
        node = node.Split(color=comm.Get_rank() // ranks_per_node, key=comm.Get_rank())
    return node


def require_one_node(comm, name):
    """The node communicator of ``comm``, which must hold all of ``comm``'s ranks (the
    one-node algorithms: ``name`` is the algorithm's, for the error)."""
    node = node_communicator(comm)
    if node.Get_size() != comm.Get_size():
        raise ValueError(
            f"{name} allreduce: all {comm.Get_size()} ranks must share one node's memory, "
            f"but this rank's node holds {node.Get_size()}; use algorithm='hierarchical'")
    return node
