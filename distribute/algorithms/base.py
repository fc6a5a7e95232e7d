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


@dataclass(frozen=True)
class LinkCosts:
    """Measured once per communicator (``cost_model.measure``); seconds and seconds per byte.

    ``latency`` holds each algorithm's own time for an 8-byte call: its alpha terms as they
    really run (MPI's C loop for ``native``; 2(P-1) messages plus Python for the ring; two
    fences for shared memory), which no single per-message alpha captures for all of them.
    ``scale`` holds, per algorithm, its measured per-byte time on one large message over what
    the formula gives from beta, gamma and copy: what the formula cannot know (MPI's C sum
    loop is not numpy's SIMD one; P ranks copying at once share memory bandwidth)."""
    alpha: float        # one point-to-point message (a ring step, from Python)
    beta: float         # seconds per byte of one message while every rank sends at once
    gamma: float        # seconds per byte of a numpy sum (a += b), all ranks at once
    copy: float         # seconds per byte of a numpy copy, all ranks at once
    barrier: float      # one fence among the ranks of a node
    latency: dict = field(default_factory=dict)     # algorithm name -> seconds for 8 bytes
    scale: dict = field(default_factory=dict)       # algorithm name -> measured / modelled

    def as_dict(self):
        return asdict(self)


class AllreduceAlgorithm:
    """Sum over ranks, in place: ``algorithm(array)`` returns ``array`` holding the sum."""
    name: str | None = None
    threaded = True      # runs Python between MPI calls: a non-blocking call goes to a thread

    def __init__(self, comm):
        self.comm = comm
        self.rank, self.size = comm.Get_rank(), comm.Get_size()

    def __call__(self, array):
        raise NotImplementedError

    def choose(self, nbytes):
        """The algorithm that will run a call on ``nbytes`` bytes (``auto`` picks one)."""
        return self

    def latency_steps(self, size):
        """How many message latencies one call costs on ``size`` ranks (scales ``latency``)."""
        return 2 * steps(size)

    def bandwidth_time(self, nbytes, costs, size):
        """The per-byte part of one call on ``size`` ranks."""
        raise NotImplementedError

    def predict(self, nbytes, costs, size=None):
        """Predicted seconds for one call on ``nbytes`` bytes under ``costs``: this algorithm's
        measured latency (scaled to ``size`` ranks when asked about another count) plus its
        per-byte time from the alpha-beta model."""
        size = size or self.size
        latency = costs.latency.get(self.name)
        if latency is None:
            latency = costs.alpha * self.latency_steps(self.size)
        if size != self.size:
            latency *= self.latency_steps(size) / max(self.latency_steps(self.size), 1)
        return latency + costs.scale.get(self.name, 1.0) * \
            self.bandwidth_time(nbytes, costs, size)


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
