"""Measuring the alpha-beta model's constants on a communicator, once per process.

A few ring shifts (every rank sends right and receives left at once, as a ring or halving step
does) of 8 bytes and of 8 MB give the latency ``alpha`` and the per-byte time ``beta``; a numpy
sum and a copy of 16 MB (past the caches, as gradients are), run on every rank at once (so
ranks sharing cores and memory bandwidth are priced as they will run), give ``gamma`` and
``copy``; a few node barriers give ``barrier``; a few 8-byte calls of each candidate
algorithm give its ``latency`` (its alpha terms as they really run); and an 8 MB
``MPI_Allreduce`` gives MPI's own reduction speed ``native_gamma``. Each figure is a median
of repeats, then the largest over ranks, so every rank holds the same numbers and ``auto``
picks the same algorithm everywhere (a different pick on two ranks would deadlock). About
0.2 s on two idle ranks.
"""
import time

import numpy as np

from hiapi.distribute.algorithms.base import LinkCosts
from hiapi.distribute.algorithms.shared_window import node_communicator
from hiapi.distribute.ring import _sendrecv

LARGE = 8 << 20
_measured = {}


def _median_time(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def _shift_time(comm, nbytes, repeats):
    """A ring step: send right while receiving from the left, in the ring's 1 MB pieces."""
    rank, size = comm.Get_rank(), comm.Get_size()
    send, recv = np.ones(nbytes, np.uint8), np.empty(nbytes, np.uint8)
    right, left = (rank + 1) % size, (rank - 1) % size
    return _median_time(lambda: _sendrecv(comm, send, right, recv, left, 1 << 20), repeats)


def _local_costs(nbytes=16 << 20, repeats=3):
    a, b = np.ones(nbytes // 4, np.float32), np.ones(nbytes // 4, np.float32)
    gamma = _median_time(lambda: np.add(a, b, out=a), repeats) / nbytes
    copy = _median_time(lambda: np.copyto(a, b), repeats) / nbytes
    return gamma, copy


def _native_gamma(seconds, latencies, beta, size):
    """MPI's reduction speed, from an 8 MB ``MPI_Allreduce``: what its time leaves after the
    latency and the bytes moved (MPI's C sum loop is not numpy's SIMD one)."""
    share = (size - 1) / size * LARGE
    rest = seconds - latencies.get("native", 0.0) - 2 * share * beta
    return max(rest, 0.0) / share


def measure(comm, algorithms=(), refresh=False):
    """``LinkCosts`` for ``comm``, with the 8-byte latency of each of ``algorithms`` (which run
    on ``comm`` or a duplicate of it). Collective: every rank calls it, with the same
    algorithms; measured on first use (or when ``refresh``), then cached for the process."""
    from mpi4py import MPI
    key = (comm.py2f(), comm.Get_size(), tuple(a.name for a in algorithms))
    if key in _measured and not refresh:
        return _measured[key]
    node = node_communicator(comm)
    comm.Barrier()
    _shift_time(comm, LARGE, 2)                                   # warm the path up
    small_t = _shift_time(comm, 8, 20)
    large_t = _shift_time(comm, LARGE, 7)
    comm.Barrier()
    gamma, copy = _local_costs()
    barrier = _median_time(node.Barrier, 20)
    node.Free()
    tiny = np.zeros(2, np.float32)
    latency = [_median_time(lambda: algorithm(tiny), 15) for algorithm in algorithms]
    vector = np.ones(LARGE // 4, np.float32)
    native_large = _median_time(lambda: comm.Allreduce(MPI.IN_PLACE, vector, MPI.SUM), 5)
    mine = np.array([small_t, max(large_t - small_t, 0.0) / LARGE, gamma, copy, barrier,
                     native_large, *latency])
    comm.Allreduce(MPI.IN_PLACE, mine, MPI.MAX)
    values = list(map(float, mine))
    latencies = dict(zip(key[2], values[6:]))
    costs = LinkCosts(*values[:5], latency=latencies,
                      native_gamma=_native_gamma(values[5], latencies, values[1],
                                                 comm.Get_size()))
    _measured[key] = costs
    return costs
