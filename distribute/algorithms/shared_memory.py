"""Allreduce through MPI shared memory, for ranks on one node.

Per chunk of at most ``chunk_bytes``: every rank copies its chunk into its own shared slot;
fence; rank j sums slice j of every rank's slot into its own slot (the reduce-scatter is P-1
numpy additions over 1/P of the chunk, read straight from the other ranks' memory); fence;
every rank copies the P summed slices out. Each byte is copied in once and out once and summed
once somewhere: no message is packed, sent, received and unpacked as MPI's point-to-point path
does. Cost per chunk of c bytes: 2 barriers + 2 c copy + (P-1)/P c gamma.

Every rank gets bit-identical results (each slice is summed by exactly one rank).
"""
import os

import numpy as np

from hiapi.distribute.algorithms.base import AllreduceAlgorithm, flat_view
from hiapi.distribute.algorithms.shared_window import SharedSlots, require_one_node
from hiapi.distribute.ring import segment_bounds

LARGEST_CHUNK = 16 << 20
MOST_CHUNKS = 8


def default_chunk_bytes(node):
    """The chunk for the one-node algorithms on ``node`` (collective; the same on every rank,
    since it sets how many fences a call makes); larger messages get larger chunks
    (``chunk_bytes_for``).

    1 MB when every rank has a core of its own: the two slots a rank alternates between stay in
    cache, and a fence is cheap (slots as large as the message, up to 16 MB, made 4 MB calls
    1.3x and 16 MB calls 1.8-1.9x slower on 2 ranks). 16 MB when ranks share cores: then every
    fence waits for a descheduled rank, and 1 MB chunks made 16 MB calls 2.1-3.6x and 64 MB
    calls 1.7-2.8x slower on 4 ranks over 2 cores (benchmark runs at load 3-5)."""
    from mpi4py import MPI
    cores = node.allreduce(os.cpu_count() or 1, op=MPI.MIN)
    return 1 << 20 if node.Get_size() <= cores else LARGEST_CHUNK


def chunk_bytes_for(nbytes, base):
    """Bytes per chunk for an ``nbytes`` message: ``base``, or more (up to 16 MB) so that a call
    makes at most ``MOST_CHUNKS`` chunks. Each chunk is a fence, and on a busy machine a fence
    can wait out a time slice of a descheduled rank: with 1 MB chunks a 64 MB call on 2 ranks
    took 0.34x native's time in one run and 1.2x in the next."""
    return max(base, min(LARGEST_CHUNK, -(-nbytes // MOST_CHUNKS)))


def reserve_chunk(shared, nbytes, base, itemsize):
    """Elements per chunk for an ``nbytes`` message, the slots grown to hold them."""
    want = chunk_bytes_for(nbytes, base)
    return min(shared.reserve(min(want, nbytes)), want) // itemsize


def reduce_own_slice(slots, rank, bounds):
    """Sum slice ``rank`` (``bounds``) of every slot into this rank's own slot."""
    lo, hi = bounds[rank], bounds[rank + 1]
    mine = slots[rank][lo:hi]
    with np.errstate(over="ignore", invalid="ignore"):     # silent on inf, as MPI's sum is
        for other, slot in enumerate(slots):
            if other != rank:
                np.add(mine, slot[lo:hi], out=mine)


class OneNodeAllreduce(AllreduceAlgorithm):
    """What the one-node algorithms share: every rank on one node, a double-buffered shared
    slot per rank, and the message taken in chunks (``chunks``), each ended by ``advance``."""

    def __init__(self, comm, chunk_bytes=None):
        super().__init__(comm)
        node = require_one_node(comm, self.name)
        self.base_chunk = chunk_bytes or default_chunk_bytes(node)
        self.shared = SharedSlots(node, max(self.base_chunk, LARGEST_CHUNK))

    def chunks(self, array):
        """Yield (chunk of ``array``'s flat view, the P slots for it); the slots advance after
        each chunk is done."""
        flat, shared = flat_view(array, self.name), self.shared
        step = reserve_chunk(shared, flat.nbytes, self.base_chunk, flat.itemsize)
        for start in range(0, len(flat), step):
            yield flat[start:start + step], shared.slots(flat.dtype)
            shared.advance()

    def extra_chunks(self, nbytes):
        """Chunks beyond the first that an ``nbytes`` message takes (each costs fences)."""
        return max(0, -(-nbytes // chunk_bytes_for(nbytes, self.base_chunk)) - 1)


class SharedMemoryAllreduce(OneNodeAllreduce):
    name = "shared_memory"

    def __call__(self, array):
        if self.size == 1:
            return array
        shared, rank = self.shared, self.rank
        for part, slots in self.chunks(array):
            slots[rank][:len(part)] = part
            shared.fence()
            bounds = segment_bounds(len(part), self.size)
            reduce_own_slice(slots, rank, bounds)
            shared.fence()
            for other, slot in enumerate(slots):
                part[bounds[other]:bounds[other + 1]] = slot[bounds[other]:bounds[other + 1]]
        return array

    def latency_steps(self, size):
        return 2                                      # two fences

    def bandwidth_time(self, nbytes, costs, size):
        return self.extra_chunks(nbytes) * 2 * costs.barrier + 2 * nbytes * costs.copy + \
            (size - 1) / size * nbytes * costs.gamma
