"""``auto``'s measured pick (``algorithms/tuner.py``) with injected timings, so every case is
deterministic: native is kept unless another candidate measured at most 95 % of its time, the
times agreed are the largest over ranks, the short list is native plus the model's best three,
and a size class is timed once, after which a call costs one dictionary lookup."""
import numpy as np
import pytest

from hiapi.distribute.algorithms.auto import AutoAllreduce
from hiapi.distribute.algorithms.base import LinkCosts
from hiapi.distribute.algorithms.tuner import NATIVE_MARGIN, Tuner, size_class

pytest.importorskip("mpi4py")


class OneRank:
    """The two calls the tuner and auto make of a communicator, for one process; ``others``
    are the times the other ranks would contribute to the MAX."""

    def __init__(self, others=()):
        self.others = [np.asarray(o, np.float64) for o in others]

    def Get_rank(self):
        return 0

    def Get_size(self):
        return 1 + len(self.others)

    def Allreduce(self, send, recv, op):
        recv[:] = np.max([send, *self.others], axis=0)


class Candidate:
    """An algorithm with a name and a fixed predicted time (the model's view of it)."""
    threaded = True

    def __init__(self, name, predicted):
        self.name, self.predicted = name, predicted

    def predict(self, nbytes, costs):
        return self.predicted


class Timings:
    """The injected timer: seconds per candidate name; records what it was asked to time."""

    def __init__(self, seconds):
        self.seconds, self.asked = seconds, []

    def __call__(self, algorithms, nbytes):
        self.asked.append((nbytes, [a.name for a in algorithms]))
        return [self.seconds[a.name] for a in algorithms]


COSTS = LinkCosts(alpha=1e-6, beta=1e-9, gamma=1e-10, copy=1e-10, barrier=1e-6)


def auto(seconds, others=(), predicted=None):
    predicted = predicted or {"ring": 3.0, "halving_doubling": 2.0, "shared_direct": 1.0,
                              "shared_memory": 4.0}
    candidates = [Candidate("native", 1.0)] + [Candidate(n, p) for n, p in predicted.items()]
    timer = Timings(seconds)
    comm = OneRank(others)
    return AutoAllreduce(comm, candidates=candidates, costs=COSTS,
                         tuner=Tuner(comm, timer=timer)), timer


def test_native_is_kept_where_it_measured_faster():
    algorithm, _ = auto({"native": 1.0, "halving_doubling": 1.2, "shared_direct": 1.5,
                         "ring": 1.1})
    assert algorithm.choose(1 << 20).name == "native"


def test_a_candidate_within_the_margin_of_native_does_not_replace_it():
    near = {"native": 1.0, "halving_doubling": 2.0, "shared_direct": NATIVE_MARGIN + 0.01,
            "ring": 3.0}
    assert auto(near)[0].choose(1 << 20).name == "native"
    faster = {**near, "shared_direct": NATIVE_MARGIN - 0.01}
    assert auto(faster)[0].choose(1 << 20).name == "shared_direct"


def test_the_pick_uses_the_slowest_rank_s_times():
    # this rank measured shared_direct fastest; another rank found it slow and
    # halving/doubling fast: the MAX over ranks decides, so every rank picks alike
    mine = {"native": 1.0, "halving_doubling": 0.9, "shared_direct": 0.5, "ring": 2.0}
    algorithm, _ = auto(mine, others=[[1.0, 1.4, 0.6, 1.0]])  # native, shared_direct, halving, ring
    assert algorithm.choose(256 << 10).name == "halving_doubling"
    assert algorithm.measured[size_class(256 << 10)] == {
        "native": 1.0, "shared_direct": 1.4, "halving_doubling": 0.9, "ring": 2.0}


def test_the_short_list_is_native_and_the_model_s_best_three():
    algorithm, timer = auto({"native": 1.0, "halving_doubling": 0.5, "shared_direct": 0.6,
                             "ring": 0.7})
    algorithm.choose(4 << 20)                             # shared_memory priced highest: left out
    assert timer.asked == [(4 << 20, ["native", "shared_direct", "halving_doubling", "ring"])]


def test_each_size_class_is_timed_once_and_then_looked_up():
    algorithm, timer = auto({"native": 1.0, "halving_doubling": 0.5, "shared_direct": 0.6,
                             "ring": 0.7})
    assert algorithm.picked(300 << 10) is None           # not tuned yet: needs the ranks
    first = algorithm.choose(300 << 10)
    assert algorithm.picked(300 << 10) is first
    assert algorithm.choose(400 << 10) is first           # same class [256 KB, 512 KB)
    assert algorithm.choose(300 << 10) is first
    assert [nbytes for nbytes, _ in timer.asked] == [300 << 10]
    algorithm.choose(600 << 10)                           # the next class is timed anew
    assert [nbytes for nbytes, _ in timer.asked] == [300 << 10, 600 << 10]


def test_native_must_come_first():
    comm = OneRank()
    with pytest.raises(ValueError, match="first candidate must be native.*'ring'"):
        AutoAllreduce(comm, candidates=[Candidate("ring", 1.0), Candidate("native", 1.0)],
                      costs=COSTS, tuner=Tuner(comm))
