"""A barrier among the ranks of one node made of counters in shared memory.

``MPI_Barrier`` (or ``Ibarrier`` polled with ``Test``) goes through MPI's progress engine: a
few microseconds idle, and on an oversubscribed machine every poll is a trip through MPI's
queues while the rank being waited for needs the core. Here each rank owns one counter, on its
own cache line, in a window every rank of the node maps (``MPI.Win.Allocate_shared``). To pass
fence number k a rank stores k into its counter and waits until every counter reads at least
k, giving the core away (``sched_yield``) between reads. Only its owner writes a counter, so
plain stores suffice (no atomics); ``Win.Sync`` before the store and after the wait is the
memory barrier the MPI-3 shared-memory model asks for, so the data written before the fence is
seen by every rank after it.

Counters only grow, so a rank that runs ahead into the next fence cannot be mistaken for one
still in the last.
"""
import os

import numpy as np

CACHE_LINE = 64


class FlagFence:
    def __init__(self, node_comm):
        from mpi4py import MPI
        self.rank, self.size = node_comm.Get_rank(), node_comm.Get_size()
        per = CACHE_LINE // 8
        self.window = MPI.Win.Allocate_shared(CACHE_LINE * self.size if self.rank == 0 else 0,
                                              1, comm=node_comm)
        self.window.Lock_all(MPI.MODE_NOCHECK)
        memory = self.window.Shared_query(0)[0]
        lines = np.frombuffer(memory, np.int64, count=per * self.size).reshape(self.size, per)
        self.counters, self.tags = lines[:, 0], lines[:, 1]
        if self.rank == 0:
            self.counters[:] = 0
            self.tags[:] = 0
        self.window.Sync()
        node_comm.Barrier()
        self.window.Sync()
        self.count = 0

    def __call__(self, tag=0):
        """Return once every rank of the node has called this as often as this rank has.
        ``tag`` (an int64) is published with it: after the fence, ``tags`` holds every rank's,
        until that rank arrives at its next fence (a caller reading the tags between two fences
        must pass the same tag to the second)."""
        self.count = count = self.count + 1
        sync, counters = self.window.Sync, self.counters
        sync()
        self.tags[self.rank] = tag
        counters[self.rank] = count
        while min(counters.tolist()) < count:
            os.sched_yield()
        sync()

    def close(self):
        self.counters = self.tags = None
        self.window.Unlock_all()
        self.window.Free()
