"""Measuring the alpha-beta model's constants on a communicator, once per process.

A few ring shifts (every rank sends right and receives left at once, as a ring or halving step
does) of 8 bytes and of 4 MB give the latency ``alpha`` and the per-byte time ``beta``; a numpy
sum and a copy of 16 MB (past the caches, as gradients are), run on every rank at once (so
ranks sharing cores and memory bandwidth are priced as they will run), give ``gamma`` and
``copy``; a few node barriers give ``barrier``; and a few 8-byte calls of each candidate
algorithm give its ``latency`` (its alpha terms as they really run). Each figure is a median
of repeats, then the largest over ranks, so every rank holds the same numbers and ``auto``
picks the same algorithm everywhere (a different pick on two ranks would deadlock). About
0.1 s on two idle ranks.
"""
import time

import numpy as np

from hiapi.distribute.algorithms.base import LinkCosts
from hiapi.distribute.algorithms.shared_window import node_communicator

LARGE = 4 << 20
_measured = {}


def _median_time(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def _shift_time(comm, nbytes, repeats):
    rank, size = comm.Get_rank(), comm.Get_size()
    send, recv = np.ones(nbytes, np.uint8), np.empty(nbytes, np.uint8)
    right, left = (rank + 1) % size, (rank - 1) % size
    return _median_time(lambda: comm.Sendrecv(send, right, 7, recv, left, 7), repeats)


def _local_costs(nbytes=16 << 20, repeats=3):
    a, b = np.ones(nbytes // 4, np.float32), np.ones(nbytes // 4, np.float32)
    gamma = _median_time(lambda: np.add(a, b, out=a), repeats) / nbytes
    copy = _median_time(lambda: np.copyto(a, b), repeats) / nbytes
    return gamma, copy


def measure(comm, algorithms=()):
    """``LinkCosts`` for ``comm``, with the 8-byte latency of each of ``algorithms`` (which run
    on ``comm`` or a duplicate of it). Collective: every rank calls it, with the same
    algorithms; measured on first use, then cached for the process."""
    from mpi4py import MPI
    key = (comm.py2f(), comm.Get_size(), tuple(a.name for a in algorithms))
    if key in _measured:
        return _measured[key]
    node = node_communicator(comm)
    comm.Barrier()
    _shift_time(comm, LARGE, 2)                                   # warm the path up
    small_t = _shift_time(comm, 8, 20)
    large_t = _shift_time(comm, LARGE, 5)
    comm.Barrier()
    gamma, copy = _local_costs()
    barrier = _median_time(node.Barrier, 20)
    node.Free()
    tiny = np.zeros(2, np.float32)
    latency = [_median_time(lambda: algorithm(tiny), 15) for algorithm in algorithms]
    mine = np.array([small_t, max(large_t - small_t, 0.0) / LARGE, gamma, copy, barrier,
                     *latency])
    comm.Allreduce(MPI.IN_PLACE, mine, MPI.MAX)
    values = list(map(float, mine))
    costs = LinkCosts(*values[:5], latency=dict(zip(key[2], values[5:])))
    _measured[key] = costs
    return costs
