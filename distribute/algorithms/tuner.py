"""``auto``'s pick per message-size class, from timing the candidates rather than trusting the
model alone (as NCCL's tuner and Horovod's autotuner do).

The alpha-beta model cannot know everything that decides which algorithm is faster at 256 KB
on a given machine: MPICH's shared-memory protocol switch points, which of the caches a
message still fits, how the scheduler treats ranks that wait. So on the first call in each size
class (sizes between two powers of two) ``auto`` times a short list of candidates on scratch
arrays of that size: MPI's native allreduce, always, and the three the model prices lowest. The
calls are interleaved round by round, and each candidate is timed by its median ratio to
native in the same round, so a burst of load falls on both sides of a ratio; that, times
native's median, is its time on this rank, then the largest over ranks is taken (one
``MPI_Allreduce``), so every rank holds the same numbers and picks the same algorithm (a
different pick on two ranks would deadlock them). Native wins unless another candidate is at
least ``NATIVE_MARGIN`` faster: ``auto`` never chooses something measured slower than native,
and noise alone does not move it off native. The pick is cached per class and per size, so
later calls cost one dictionary lookup.

The tuning calls are collectives: the first call of a size class must come in the same order
on every rank, as every collective must (``MPICommunicator`` first drains its background
thread, so the tuning never runs beside a queued allreduce).
"""
import time

import numpy as np

SHORTLIST = 3                 # candidates timed besides native: the model's best three
NATIVE_MARGIN = 0.95          # another candidate must take at most 95 % of native's time


def size_class(nbytes):
    """Sizes from 2**(k-1) to 2**k - 1 bytes share class k."""
    return int(nbytes).bit_length()


def rounds_for(nbytes):
    """Many rounds for small messages (a round of four candidates at 1 MB takes about 2 ms
    here), fewer for large ones, so tuning a class costs at most about half a second."""
    for limit, rounds in ((256 << 10, 30), (1 << 20, 20), (4 << 20, 15), (16 << 20, 7)):
        if nbytes <= limit:
            return rounds
    return 3


def interleaved_times(algorithms, nbytes, dtype=np.float32):
    """This rank's seconds per call of each algorithm on a zero array of ``nbytes``
    (``algorithms[0]`` is native): native's median over the rounds, and for the others their
    median ratio to native in the same round times that, so a burst of load that slows one
    round slows both sides of its ratio (4 ranks on 2 cores picked 1.1x-slower algorithms from
    plain medians)."""
    array = np.zeros(max(nbytes // np.dtype(dtype).itemsize, 1), dtype)
    calls = max(1, min(8, (1 << 20) // max(nbytes, 1)))
    for algorithm in algorithms:                 # first call: buffers, windows, caches
        algorithm(array)
    times = [[] for _ in algorithms]
    for _ in range(rounds_for(nbytes)):
        for algorithm, mine in zip(algorithms, times):
            start = time.perf_counter()
            for _ in range(calls):
                algorithm(array)
            mine.append((time.perf_counter() - start) / calls)
    native = float(np.median(times[0]))
    return [native] + [float(np.median(np.divide(t, times[0]))) * native for t in times[1:]]


class Tuner:
    """Times ``shortlist(nbytes)`` on ``comm`` (``timer`` is injectable: tests give measured
    costs directly) and returns the pick with every rank's agreed times."""

    def __init__(self, comm, timer=interleaved_times):
        self.comm, self.timer = comm, timer

    def pick(self, nbytes, shortlist):
        """``(algorithm, {name: seconds})`` for ``nbytes``; ``shortlist[0]`` must be native."""
        from mpi4py import MPI
        local = np.array(self.timer(shortlist, nbytes), np.float64)
        agreed = np.empty_like(local)
        self.comm.Allreduce(local, agreed, MPI.MAX)
        times = {a.name: float(t) for a, t in zip(shortlist, agreed)}
        best = min(range(1, len(shortlist)), key=lambda i: agreed[i], default=0)
        if best and agreed[best] <= NATIVE_MARGIN * agreed[0]:
            return shortlist[best], times
        return shortlist[0], times
