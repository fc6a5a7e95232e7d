"""fit's thread tuner: times steps with each candidate thread count, keeps the fastest, looks
again later, stays off where the user fixed the count, and runs in seeded scripts too."""
import numpy as np
import pytest

import hiapi
from hiapi.callbacks.thread_tuning import ThreadTuning
from hiapi.runtime import random_streams, thread_tuner, threads
from hiapi.runtime.thread_tuner import ThreadTuner, candidates


class Machine:
    """A fake clock whose train step costs depend on the thread count in use."""

    def __init__(self, costs):
        self.costs, self.now, self.current, self.used = costs, 0.0, max(costs), []

    def use(self, n):
        self.current = n

    def clock(self):
        return self.now

    def run(self, tuner, steps):
        for step in range(steps):
            tuner.batch_begin()
            self.now += self.costs[self.current]
            self.used.append(self.current)
            tuner.batch_end()


@pytest.fixture
def machine(monkeypatch):
    fake = Machine({4: 0.010, 2: 0.006, 1: 0.003})
    monkeypatch.setattr(threads, "adaptive", lambda: True)
    monkeypatch.setattr(threads, "budget", lambda: threads.Budget(4, 4, 1, "affinity"))
    monkeypatch.setattr(threads, "use", fake.use)
    monkeypatch.setattr(thread_tuner.time, "perf_counter", fake.clock)
    return fake


def test_candidates_are_the_budget_its_halves_and_one():
    assert candidates(1) == [1]
    assert candidates(2) == [2, 1]
    assert candidates(16) == [16, 8, 4, 2, 1]
    assert candidates(6) == [6, 3, 1]


def test_keeps_the_fastest_count_and_follows_a_change_of_load(machine):
    tuner = ThreadTuner()
    tuner.train_begin()
    machine.run(tuner, 1 + 3 * thread_tuner.TURNS * (1 + thread_tuner.TURN_STEPS))  # + compile
    assert tuner.choice == 1 and machine.current == 1
    machine.run(tuner, 2000)
    tail = machine.used[-2000:]
    assert tail.count(1) / len(tail) > 0.9        # the slower counts only while probing
    machine.costs = {4: 0.002, 2: 0.003, 1: 0.004}                 # the machine went quiet
    machine.run(tuner, 2 * thread_tuner.MAX_INTERVAL)
    assert tuner.choice == 4 and machine.current == 4
    tuner.train_end()
    assert machine.current == 4


def test_probes_less_often_while_the_choice_holds(machine):
    tuner = ThreadTuner()
    tuner.train_begin()
    machine.run(tuner, 3000)
    assert tuner.interval == thread_tuner.MAX_INTERVAL
    assert tuner.probes < 12           # 50, 100, 200, 400, 800, 800 ... steps apart


def test_inactive_when_not_adaptive(machine, monkeypatch):
    monkeypatch.setattr(threads, "adaptive", lambda: False)
    tuner = ThreadTuner()
    tuner.train_begin()
    machine.run(tuner, 200)
    assert set(machine.used) == {4} and tuner.choice is None


def test_a_fit_with_the_count_fixed_after_a_tuned_one_runs_with_the_full_budget(machine,
                                                                             monkeypatch):
    tuner = ThreadTuner()
    tuner.train_begin()
    machine.run(tuner, 100)
    tuner.train_end()
    assert machine.current == 1
    monkeypatch.setattr(threads, "adaptive", lambda: False)     # e.g. OMP_NUM_THREADS since
    tuner.train_begin()
    assert machine.current == 4


def test_adaptive_only_for_a_budget_hiapi_chose(monkeypatch):
    monkeypatch.delenv("HIAPI_NUM_THREADS", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    for name in threads.WORLD_SIZE_VARS + threads.LOCAL_SIZE_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(threads, "_computed", threads.Budget(2, 2, 1, "affinity"))
    assert threads.adaptive()
    monkeypatch.setenv("HIAPI_NUM_THREADS", "2")
    assert not threads.adaptive()                       # the user fixed it
    monkeypatch.delenv("HIAPI_NUM_THREADS")
    monkeypatch.setattr(threads, "_computed", threads.Budget(1, 2, 2, "affinity / 2 ranks"))
    assert not threads.adaptive()                       # one thread: nothing to choose
    monkeypatch.setattr(threads, "_computed", threads.Budget(2, 2, 1, "affinity"))
    monkeypatch.setattr(random_streams, "_shuffle_seed", random_streams.shuffle_seed() + 1)
    assert threads.adaptive()               # set_random_seed was called: on all the same


def test_on_for_a_model_whose_batch_order_was_seeded(machine):
    tuner = ThreadTuning(ThreadTuner())
    tuner.set_model(type("Resumed", (), {"_shuffle_seed": hiapi.random.shuffle_seed() + 1})())
    tuner.on_train_begin()
    tuner = tuner.tuner
    machine.run(tuner, 200)
    assert tuner.choice == 1 and set(machine.used) == {4, 2, 1}


def test_fit_runs_with_the_tuner_and_ends_on_a_candidate():
    model = hiapi.Sequential([hiapi.Input((20,)), hiapi.layers.Dense(8, activation="relu"),
                              hiapi.layers.Dense(2, activation="softmax")])
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    x = np.random.default_rng(0).normal(size=(640, 20)).astype("float32")
    model.fit(x, (x[:, 0] > 0).astype("int64"), batch_size=8, epochs=1, verbose=0)
    assert threads.active_threads() in candidates(threads.budget().threads)
    threads.apply()


def test_a_sudden_change_of_step_time_probes_at_once(machine):
    tuner = ThreadTuner()
    tuner.train_begin()
    machine.run(tuner, 3000)                   # settled on 1 thread, probing every 800 steps
    assert tuner.choice == 1 and tuner.interval == thread_tuner.MAX_INTERVAL
    machine.costs = {4: 0.002, 2: 0.005, 1: 0.012}     # 1 thread now 4x slower than before
    machine.run(tuner, thread_tuner.RECENT + 3 * thread_tuner.TURNS * (1 + thread_tuner.TURN_STEPS))
    assert tuner.choice == 4


class SlicedMachine(Machine):
    """A busy machine: a step in which the scheduler's time slice ends takes 2.2 times as long
    (with 2 busy processes on 2 cores the MNIST MLP step took either ~3.7 or ~8 ms), at
    random, about every other step, whatever the thread count."""

    def __init__(self, costs):
        super().__init__(costs)
        self.random = np.random.default_rng(0)

    def run(self, tuner, steps):
        for step in range(steps):
            tuner.batch_begin()
            slow = self.random.random() < 0.5
            self.now += self.costs[self.current] * (2.2 if slow else 1.0)
            self.used.append(self.current)
            tuner.batch_end()


def _sliced(monkeypatch, costs):
    fake = SlicedMachine(costs)
    monkeypatch.setattr(threads, "adaptive", lambda: True)
    monkeypatch.setattr(threads, "budget", lambda: threads.Budget(2, 2, 1, "affinity"))
    monkeypatch.setattr(threads, "use", fake.use)
    monkeypatch.setattr(thread_tuner.time, "perf_counter", fake.clock)
    tuner = ThreadTuner()
    tuner.train_begin()
    fake.run(tuner, 3000)
    return fake, tuner


def test_time_slices_do_not_hide_the_faster_count(monkeypatch):
    fake, tuner = _sliced(monkeypatch, {2: 0.004, 1: 0.008})
    assert tuner.choice == 2 and fake.used.count(2) / len(fake.used) > 0.9


@pytest.mark.parametrize("costs", [{2: 0.005, 1: 0.005}, {2: 0.004, 1: 0.005}])
def test_time_slices_do_not_trigger_probes(monkeypatch, costs):
    _, tuner = _sliced(monkeypatch, costs)
    assert tuner.probes < 12            # the intervals grew: no probe from drift
