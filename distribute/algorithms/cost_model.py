"""Measuring the alpha-beta model's constants on a communicator, once per process.

A few ring shifts (every rank sends right and receives left at once, as a ring or halving step
does) of 8 bytes and of 8 MB give the latency ``alpha`` and the per-byte time ``beta``; a numpy
sum and a copy of 16 MB (past the caches, as gradients are), run on every rank at once (so
ranks sharing cores and memory bandwidth are priced as they will run), give ``gamma`` and
``copy``; a few node fences (``FlagFence``, as the shared-memory algorithms use) give
``barrier``; a few 8-byte calls of each candidate
algorithm give its ``latency`` (its alpha terms as they really run), nine 256 KB calls its
``middle`` time, and three 16 MB calls its ``scale``: measured over modelled per-byte time
from 256 KB on (the candidates' calls are interleaved, round by round). Each figure is a median (latencies and 256 KB times: the lower quartile) of
repeats, then the largest over ranks, so every rank holds the same numbers and ``auto`` picks
the same algorithm everywhere (a different pick on two ranks would deadlock). About 0.3 s on
two idle ranks.
"""
import time
from dataclasses import replace

import numpy as np

from hiapi.distribute.algorithms.base import MIDDLE, LinkCosts, timing_array
from hiapi.distribute.algorithms.flag_fence import FlagFence
from hiapi.distribute.algorithms.shared_window import node_communicator
from hiapi.distribute.ring import _sendrecv

LARGE = 8 << 20              # the ring shift that measures beta
CALIBRATION = 16 << 20       # each algorithm's one large call: near a 25 MB gradient bucket
# latencies (and 256 KB times) are the lower quartile of their repeats: on a loaded machine a
# short call's time is mostly waiting for the partner to be scheduled, which the median would
# price as latency
LATENCY_QUANTILE = 25
_measured: dict = {}          # measured link costs, cached per process


def _median_time(fn, repeats, quantile=50):
    """The ``quantile`` of ``repeats`` timings of ``fn()`` (the median by default)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.percentile(times, quantile))


def _interleaved(algorithms, array, rounds, quantile=50):
    """Per algorithm, the ``quantile`` of its times on ``array`` over ``rounds`` rounds, each
    round calling every algorithm once, so a burst of load falls on all of them alike."""
    times = [[] for _ in algorithms]
    for _ in range(rounds):
        for algorithm, mine in zip(algorithms, times):
            start = time.perf_counter()
            algorithm(array)
            mine.append(time.perf_counter() - start)
    return [float(np.percentile(t, quantile)) for t in times]


def _shift_time(comm, nbytes, repeats, quantile=50):
    """A ring step: send right while receiving from the left, in the ring's 1 MB pieces."""
    rank, size = comm.Get_rank(), comm.Get_size()
    send, recv = np.ones(nbytes, np.uint8), np.empty(nbytes, np.uint8)
    right, left = (rank + 1) % size, (rank - 1) % size
    return _median_time(lambda: _sendrecv(comm, send, right, recv, left, 1 << 20), repeats,
                        quantile)


def _local_costs(nbytes=16 << 20, repeats=3):
    a, b = np.ones(nbytes // 4, np.float32), np.ones(nbytes // 4, np.float32)
    gamma = _median_time(lambda: np.add(a, b, out=a), repeats) / nbytes
    copy = _median_time(lambda: np.copyto(a, b), repeats) / nbytes
    return gamma, copy


def _scales(algorithms, costs, middle, large):
    """Per algorithm: its measured time from ``MIDDLE`` to ``CALIBRATION`` bytes over what the
    formula gives for those bytes."""
    out = {}
    for algorithm, low, high in zip(algorithms, middle, large):
        formula = algorithm.bandwidth_time(CALIBRATION, costs, algorithm.size) - \
            algorithm.bandwidth_time(MIDDLE, costs, algorithm.size)
        out[algorithm.name] = max(high - low, 0.1 * formula) / formula if formula > 0 else 1.0
    return out


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
    small_t = _shift_time(comm, 8, 20, LATENCY_QUANTILE)
    large_t = _shift_time(comm, LARGE, 7)
    comm.Barrier()
    gamma, copy = _local_costs()
    fence = FlagFence(node)
    barrier = _median_time(fence, 20, LATENCY_QUANTILE)
    fence.close()
    node.Free()
    # in the memory the buckets will live in (zero_copy's shared memory, where it may run)
    latency = _interleaved(algorithms, timing_array(algorithms, 2, np.float32), 20,
                           LATENCY_QUANTILE)
    middle = _interleaved(algorithms, timing_array(algorithms, MIDDLE // 4, np.float32), 9,
                          LATENCY_QUANTILE)
    vector = timing_array(algorithms, CALIBRATION // 4, np.float32)
    for algorithm in algorithms:                 # first call at this size: buffers, windows
        algorithm(vector)
    large = _interleaved(algorithms, vector, 3)
    mine = np.array([small_t, max(large_t - small_t, 0.0) / LARGE, gamma, copy, barrier,
                     *latency, *middle, *large])
    comm.Allreduce(MPI.IN_PLACE, mine, MPI.MAX)
    values, n = list(map(float, mine)), len(algorithms)
    latency, middle, large = values[5:5 + n], values[5 + n:5 + 2 * n], values[5 + 2 * n:]
    costs = LinkCosts(*values[:5], latency=dict(zip(key[2], latency)),
                      middle=dict(zip(key[2], middle)))
    costs = replace(costs, scale=_scales(algorithms, costs, middle, large))
    _measured[key] = costs
    return costs
