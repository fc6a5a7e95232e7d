"""``auto``'s measured pick (``algorithms/tuner.py``) with injected timings, so every case is
deterministic: native is kept unless another candidate measured at most 95 % of its time
(with the whole 95 % interval of its median ratio below that), candidates within noise get
more rounds and a tie stays native, the times agreed are the largest over ranks round by
round, the short list is native plus the model's best three, and a size class is timed once,
after which a call costs one dictionary lookup and no communication."""
import numpy as np
import pytest

from hiapi.distribute.algorithms.auto import AutoAllreduce
from hiapi.distribute.algorithms.base import LinkCosts
from hiapi.distribute.algorithms.tuner import (MORE_BATCHES, NATIVE_MARGIN, Tuner, decide,
                                               median_interval, rounds_for, size_class)

pytest.importorskip("mpi4py")


class OneRank:
    """The two calls the tuner and auto make of a communicator, for one process; ``others``
    are the times the other ranks would contribute to the MAX."""

    def __init__(self, others=()):
        self.others = [np.asarray(o, np.float64) for o in others]
        self.calls = 0

    def Get_rank(self):
        return 0

    def Get_size(self):
        return 1 + len(self.others)

    def Allreduce(self, send, recv, op):
        self.calls += 1
        recv[:] = np.max([send, *[np.broadcast_to(o, send.shape) for o in self.others]], axis=0)


class Candidate:
    """An algorithm with a name and a fixed predicted time (the model's view of it)."""
    threaded = True

    def __init__(self, name, predicted):
        self.name, self.predicted = name, predicted

    def predict(self, nbytes, costs):
        return self.predicted

    def scratch(self, count, dtype):
        return None


class Timings:
    """The injected timer: seconds per candidate name, the same every round, or a function of
    (name, round number) for noisy ones; records what it was asked to time."""

    def __init__(self, seconds):
        self.seconds, self.asked, self.rounds = seconds, [], 0

    def __call__(self, algorithms, array, rounds):
        self.asked.append((array.nbytes, [a.name for a in algorithms]))
        out = []
        for _ in range(rounds):
            self.rounds += 1
            out.append([self.seconds(a.name, self.rounds) if callable(self.seconds)
                        else self.seconds[a.name] for a in algorithms])
        return out


COSTS = LinkCosts(alpha=1e-6, beta=1e-9, gamma=1e-10, copy=1e-10, barrier=1e-6)


def auto(seconds, others=(), predicted=None, comm=None):
    predicted = predicted or {"ring": 3.0, "halving_doubling": 2.0, "shared_direct": 1.0,
                              "shared_memory": 4.0}
    candidates = [Candidate("native", 1.0)] + [Candidate(n, p) for n, p in predicted.items()]
    timer = Timings(seconds)
    comm = comm or OneRank(others)
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


def noisy(ratios, spread):
    """Per-round seconds: native 1.0, each named candidate ``ratio`` times it, every round off
    by up to ``spread`` (a fixed pattern, so the test is deterministic)."""
    pattern = [0.0, 1.0, -1.0, 0.5, -0.5, 0.8, -0.8, 0.2, -0.2]
    return lambda name, r: ratios.get(name, 3.0) * (
        1.0 + (spread * pattern[r % len(pattern)] if name != "native" else 0.0))


def test_a_clearly_faster_candidate_is_picked_after_one_batch_despite_noise():
    algorithm, timer = auto(noisy({"native": 1.0, "shared_direct": 0.8}, 0.1))
    assert algorithm.choose(1 << 20).name == "shared_direct"
    assert len(timer.asked) == 1 and timer.rounds == rounds_for(1 << 20)


def test_a_tie_with_native_stays_native_without_more_rounds():
    # 1.0 +- 4 %: every round within noise of native, the interval wholly above the margin
    algorithm, timer = auto(noisy({"native": 1.0, "shared_direct": 1.0}, 0.04))
    assert algorithm.choose(1 << 20).name == "native"
    assert len(timer.asked) == 1


def test_within_noise_of_the_margin_more_rounds_are_timed_then_native():
    # 0.95 +- 10 %: the interval straddles the margin however many rounds are timed
    algorithm, timer = auto(noisy({"native": 1.0, "shared_direct": NATIVE_MARGIN}, 0.1))
    assert algorithm.choose(1 << 20).name == "native"
    assert len(timer.asked) == MORE_BATCHES + 1
    assert algorithm.tuner.rounds == (MORE_BATCHES + 1) * rounds_for(1 << 20)


def test_more_rounds_settle_a_pick_the_first_batch_could_not():
    # two bad rounds of three at first (load on this rank), then a clear 0.8: the first batch
    # straddles the margin, and the rounds added make the pick
    seconds = lambda name, r: 1.0 if name == "native" else (
        1.3 if r <= 2 and name == "shared_direct" else 0.8 if name == "shared_direct" else 3.0)
    algorithm, timer = auto(seconds)
    assert algorithm.choose(64 << 20).name == "shared_direct"     # 3 rounds a batch at 64 MB
    assert 1 < len(timer.asked) <= MORE_BATCHES + 1


def test_rounds_are_agreed_one_by_one_as_the_slowest_rank_s():
    # 64 MB: batches of 3 rounds. This rank: native 1.0, shared_direct 0.5 every round; another
    # rank was slow in native's second round only and measured shared_direct at 0.8: each
    # round's MAX is taken, then the ratios (0.8, 0.4, 0.8): the median ratio 0.8 is native's
    # median 1.0 times 0.8, which a MAX of per-rank medians would not give
    other = [[1.0, 0.8, 0.0, 0.0], [2.0, 0.8, 0.0, 0.0], [1.0, 0.8, 0.0, 0.0]]
    algorithm, timer = auto({"native": 1.0, "shared_direct": 0.5, "halving_doubling": 2.0,
                             "ring": 3.0}, others=[other])
    assert algorithm.choose(64 << 20).name == "shared_direct"
    measured = algorithm.measured[size_class(64 << 20)]
    assert measured["native"] == 1.0 and measured["shared_direct"] == pytest.approx(0.8)
    assert decide(np.array([[1.0, 0.9]] * 5)) == 1
    assert decide(np.array([[1.0, 0.96]] * 5)) == 0
    assert decide(np.array([[1.0]])) == 0                 # native alone


def test_the_median_interval_widens_with_fewer_rounds():
    assert median_interval([3.0, 1.0, 2.0]) == (2.0, 1.0, 3.0)
    values = np.arange(100.0)
    median, low, high = median_interval(values)
    assert median == 49.5 and 35 <= low < median < high <= 64


def test_a_tuned_size_needs_no_communication():
    comm = OneRank()
    algorithm, timer = auto({"native": 1.0, "halving_doubling": 0.5, "shared_direct": 0.6,
                             "ring": 0.7}, comm=comm)
    algorithm.choose(1 << 20)
    calls = comm.calls
    for _ in range(100):
        assert algorithm.picked(1 << 20).name == "halving_doubling"
        algorithm.choose(1 << 20)
    assert comm.calls == calls and len(timer.asked) == 1
