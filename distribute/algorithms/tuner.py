"""``auto``'s pick per message-size class, from timing the candidates rather than trusting the
model alone (as NCCL's tuner and Horovod's autotuner do).

The alpha-beta model cannot know everything that decides which algorithm is faster at 256 KB
on a given machine: MPICH's shared-memory protocol switch points, which of the caches a
message still fits, how the scheduler treats ranks that wait. So on the first call in each size
class (sizes between two powers of two) ``auto`` times a short list of candidates on a scratch
array of that size (in shared memory when ``zero_copy`` is a candidate: where the strategy's
buckets live): MPI's native allreduce, always, and the three the model prices lowest. The
calls are interleaved round by round; every round's times are agreed over ranks (the largest,
one ``MPI_Allreduce`` per batch of rounds), and each candidate is judged by its per-round
ratio to native, so a burst of load falls on both sides of a ratio. A candidate replaces
native only when the 95 % interval of its median ratio lies below ``NATIVE_MARGIN``; where the
interval straddles it (candidates within noise of native: 2 ranks at 1-16 MB, where the
shared-memory copies tie MPICH), more rounds are timed, and what is still undecided after them
stays native. Every rank decides from the same agreed numbers, so every rank picks the same
algorithm. The pick is cached per class and per size, so later calls cost one dictionary
lookup (``AutoAllreduce.picked``; no communication).

The tuning calls are collectives: the first call of a size class must come in the same order
on every rank, as every collective must (``MPICommunicator`` first drains its background
thread, so the tuning never runs beside a queued allreduce).
"""
import math
import time

import numpy as np

from hiapi.distribute.algorithms.base import timing_array

SHORTLIST = 3                 # candidates timed besides native: the model's best three
NATIVE_MARGIN = 0.95          # another candidate must take at most 95 % of native's time
MORE_BATCHES = 3              # batches of rounds added while the pick is within noise


def size_class(nbytes):
    """Sizes from 2**(k-1) to 2**k - 1 bytes share class k."""
    return int(nbytes).bit_length()


def rounds_for(nbytes):
    """Many rounds for small messages (a round of four candidates at 1 MB takes about 2 ms
    here), fewer for large ones, so one batch of rounds costs at most about half a second."""
    for limit, rounds in ((256 << 10, 30), (1 << 20, 20), (4 << 20, 15), (16 << 20, 7)):
        if nbytes <= limit:
            return rounds
    return 3


def interleaved_times(algorithms, array, rounds):
    """This rank's seconds per call of each algorithm on ``array``, per round: a
    ``(rounds, len(algorithms))`` array. A round calls every algorithm once (a few calls for
    small arrays), so a burst of load falls on all of them alike."""
    calls = max(1, min(8, (1 << 20) // max(array.nbytes, 1)))
    for algorithm in algorithms:                 # first call: buffers, windows, caches
        algorithm(array)
    times = np.empty((rounds, len(algorithms)))
    for r in range(rounds):
        for i, algorithm in enumerate(algorithms):
            start = time.perf_counter()
            for _ in range(calls):
                algorithm(array)
            times[r, i] = (time.perf_counter() - start) / calls
    return times


def median_interval(values):
    """The median of ``values`` and a distribution-free 95 % interval around it: the order
    statistics n/2 -+ 0.98 sqrt(n) (the whole range for a handful of values)."""
    ordered = np.sort(values)
    n = len(ordered)
    k = max(0, math.floor(n / 2 - 0.98 * math.sqrt(n)))
    return float(np.median(ordered)), float(ordered[k]), float(ordered[n - 1 - k])


def decide(times, final=False):
    """From agreed per-round times (``(rounds, candidates)``, native in column 0): the index
    picked, or None while the pick is within noise and more rounds may settle it.

    Each candidate is judged by its per-round ratio to native (a burst of load slows both sides
    of a ratio: 4 ranks on 2 cores picked 1.1x-slower algorithms from plain medians). The
    candidate with the lowest median ratio is picked when the whole 95 % interval of that
    median is below ``NATIVE_MARGIN``; native when the interval is wholly above it (a tie,
    or slower); otherwise undecided, and on the ``final`` batch native (a tie goes to native,
    which has no Python between its messages to be descheduled in)."""
    if times.shape[1] == 1:
        return 0
    ratios = times[:, 1:] / times[:, :1]
    medians = np.median(ratios, axis=0)
    best = int(np.argmin(medians))
    _, low, high = median_interval(ratios[:, best])
    if high < NATIVE_MARGIN:
        return best + 1
    if low >= NATIVE_MARGIN or final:
        return 0
    return None


class Tuner:
    """Times ``shortlist(nbytes)`` on ``comm`` in batches of interleaved rounds, agrees every
    round's times over ranks (the largest: a collective is as slow as its slowest rank), and
    adds batches while the pick is within noise (``decide``), up to ``MORE_BATCHES`` more.
    Every rank decides from the same agreed numbers, so every rank picks the same algorithm
    (a different pick on two ranks would deadlock them) and runs the same number of rounds.
    ``timer`` is injectable: tests give per-round times directly."""

    def __init__(self, comm, timer=interleaved_times):
        self.comm, self.timer = comm, timer
        self.rounds = 0               # rounds the last pick timed

    def pick(self, nbytes, shortlist, dtype=np.float32):
        """``(algorithm, {name: seconds})`` for ``nbytes``; ``shortlist[0]`` must be native.
        The seconds are native's median over the agreed rounds, and for the others their
        median ratio to native times that."""
        from mpi4py import MPI
        array = timing_array(shortlist, max(nbytes // np.dtype(dtype).itemsize, 1), dtype)
        batch, agreed = rounds_for(nbytes), []
        for more in range(MORE_BATCHES + 1):
            local = np.ascontiguousarray(self.timer(shortlist, array, batch), np.float64)
            local = local.reshape(-1, len(shortlist))
            mine = np.empty_like(local)
            self.comm.Allreduce(local, mine, MPI.MAX)
            agreed.append(mine)
            times = np.concatenate(agreed)
            chosen = decide(times, final=more == MORE_BATCHES)
            if chosen is not None:
                break
        native = float(np.median(times[:, 0]))
        seconds = [native] + [float(np.median(times[:, i] / times[:, 0])) * native
                              for i in range(1, len(shortlist))]
        self.rounds = len(times)
        return shortlist[chosen], {a.name: t for a, t in zip(shortlist, seconds)}
