"""The interface every allreduce algorithm implements, and the per-link costs it is priced by.

An algorithm is a small class made once per communicator (collectively: every rank constructs
it, in the same order, since some set up sub-communicators or shared memory). Calling it sums
a contiguous array over the ranks, in place. ``predict(nbytes, costs)`` prices one call with
the alpha-beta model of the seed notes (Thakur, Rabenseifner & Gropp 2005): a message of n
bytes costs ``alpha + n * beta``; reducing n bytes costs ``n * gamma``; copying them costs
``n * copy``; a barrier among the ranks sharing a node costs ``barrier``. ``auto`` picks the
algorithm with the smallest prediction, and ``Strategy.explain()`` prints them.
"""
from dataclasses import asdict, dataclass, field
import math

import numpy as np


@dataclass(frozen=True)
class LinkCosts:
    """Measured once per communicator (``cost_model.measure``); seconds and seconds per byte.

    ``latency`` holds each algorithm's own time for an 8-byte call: its alpha terms as they
    really run (MPI's C loop for ``native``; 2(P-1) messages plus Python for the ring; two
    fences for shared memory), which no single per-message alpha captures for all of them.
    ``middle`` holds each algorithm's time for ``MIDDLE`` bytes, and ``scale`` its measured
    per-byte time beyond that (up to one large message) over what the formula gives from beta,
    gamma and copy: what the formula cannot know (MPI's C sum loop is not numpy's SIMD one; P
    ranks copying at once share memory bandwidth; small messages stay in cache). So each
    algorithm's line passes through its own three measured points: alpha-beta by pieces."""
    alpha: float        # one point-to-point message (a ring step, from Python)
    beta: float         # seconds per byte of one message while every rank sends at once
    gamma: float        # seconds per byte of a numpy sum (a += b), all ranks at once
    copy: float         # seconds per byte of a numpy copy, all ranks at once
    barrier: float      # one fence among the ranks of a node
    latency: dict = field(default_factory=dict)     # algorithm name -> seconds for 8 bytes
    scale: dict = field(default_factory=dict)       # algorithm name -> measured / modelled
    middle: dict = field(default_factory=dict)      # algorithm name -> seconds for MIDDLE

    def as_dict(self):
        return asdict(self)


MIDDLE = 256 << 10      # the message size between latency and bandwidth that is measured too


class AllreduceAlgorithm:
    """Sum over ranks, in place: ``algorithm(array)`` returns ``array`` holding the sum."""
    name: str | None = None
    threaded = True      # runs Python between MPI calls: a non-blocking call goes to a thread

    def __init__(self, comm):
        self.comm = comm
        self.rank, self.size = comm.Get_rank(), comm.Get_size()

    def __call__(self, array):
        raise NotImplementedError

    def allocate(self, count, dtype):
        """A 1-D array this algorithm reduces faster than the caller's own memory (collective),
        or None where any memory will do (``zero_copy`` returns one in shared memory)."""
        return None

    def scratch(self, count, dtype):
        """Like ``allocate``, but one array reused from call to call (collective when it
        grows): where ``auto``'s tuner and the cost model time the candidates."""
        return None

    def release_unused(self):
        """Free the arrays ``allocate`` gave that nothing uses any more (collective: every rank
        calls it at the same point); returns how many. Nothing to free by default."""
        return 0

    def choose(self, nbytes):
        """The algorithm that will run a call on ``nbytes`` bytes (``auto`` picks one)."""
        return self

    def picked(self, nbytes):
        """``choose(nbytes)`` if it needs no communication, else None (``auto`` on a size
        it has not tuned yet)."""
        return self

    def latency_steps(self, size):
        """How many message latencies one call costs on ``size`` ranks (scales ``latency``)."""
        return 2 * steps(size)

    def bandwidth_time(self, nbytes, costs, size):
        """The per-byte part of one call on ``size`` ranks."""
        raise NotImplementedError

    def predict(self, nbytes, costs, size=None):
        """Predicted seconds for one call on ``nbytes`` bytes under ``costs``: this algorithm's
        measured latency, then the line to its measured ``MIDDLE``-byte time, then its per-byte
        formula (scaled to what it measured); for another rank count ``size``, the latency
        scaled by the formula's steps plus the scaled per-byte formula."""
        size = size or self.size
        latency = costs.latency.get(self.name)
        if latency is None:
            latency = costs.alpha * self.latency_steps(self.size)
        scale = costs.scale.get(self.name, 1.0)
        middle = costs.middle.get(self.name)
        if size == self.size and middle is not None:
            middle = max(middle, latency)
            if nbytes <= MIDDLE:
                return latency + (middle - latency) * nbytes / MIDDLE
            return middle + scale * max(self.bandwidth_time(nbytes, costs, size) -
                                        self.bandwidth_time(MIDDLE, costs, size), 0.0)
        if size != self.size:
            latency *= self.latency_steps(size) / max(self.latency_steps(self.size), 1)
        return latency + scale * self.bandwidth_time(nbytes, costs, size)


def timing_array(algorithms, count, dtype):
    """A zeroed ``count``-element array to time ``algorithms`` on: in the memory the first of
    them that has its own prefers (``zero_copy``'s shared memory, where the strategy's buckets
    live when it may be picked), else a plain one. Collective."""
    for algorithm in algorithms:
        array = algorithm.scratch(count, dtype)
        if array is not None:
            array.fill(0)
            return array
    return np.zeros(count, dtype)


def flat_view(array, algorithm):
    """``array`` as a 1-D view, so a sum written into it lands in the caller's array."""
    if not array.flags.c_contiguous:
        raise ValueError(f"{algorithm} allreduce: the array must be C-contiguous (it is summed "
                         f"in place), got one with strides {array.strides} for shape "
                         f"{array.shape}; pass np.ascontiguousarray(array)")
    return array.reshape(-1)


def steps(size):
    """Rounds of a recursive halving/doubling over ``size`` ranks (ceil(log2 P))."""
    return math.ceil(math.log2(size)) if size > 1 else 0
