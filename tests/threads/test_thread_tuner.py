"""The thread tuner: each compiled step times its own calls with each candidate thread count,
keeps the fastest, keeps what it learnt across fit/evaluate/predict calls, probes again only
when its own time changes (or rarely), stays off where the user fixed the count, and runs in
seeded scripts too."""
import numpy as np
import pytest

import hiapi
from hiapi.runtime import random_streams, thread_tuner, threads
from hiapi.runtime.thread_tuner import StepTuner, candidates


class Machine:
    """A fake clock whose step costs depend on the thread count in use."""

    def __init__(self, costs):
        self.costs, self.now, self.current, self.used = costs, 0.0, max(costs), []

    def use(self, n):
        self.current = n

    def clock(self):
        return self.now

    def cost(self):
        return self.costs[self.current]

    def run(self, tuner, steps):
        for _ in range(steps):
            start = tuner.begin()
            self.now += self.cost()
            self.used.append(self.current)
            tuner.end(start)


def _fake(monkeypatch, fake, budget):
    monkeypatch.setattr(threads, "adaptive", lambda: True)
    monkeypatch.setattr(threads, "budget", lambda: threads.Budget(budget, budget, 1, "affinity"))
    monkeypatch.setattr(threads, "use", fake.use)
    monkeypatch.setattr(thread_tuner.time, "perf_counter", fake.clock)
    monkeypatch.setattr(thread_tuner, "_adapting", None)
    monkeypatch.setattr(thread_tuner, "_last_choice", None)
    return fake


class TickingMachine(Machine):
    """For real steps: every read of the clock advances it by what a step costs with the count
    in use, so the time between a step's begin and end is that cost."""

    def clock(self):
        self.now += self.cost()
        return self.now


@pytest.fixture
def machine(monkeypatch):
    return _fake(monkeypatch, Machine({4: 0.010, 2: 0.006, 1: 0.003}), 4)


@pytest.fixture
def ticking(monkeypatch):
    return _fake(monkeypatch, TickingMachine({2: 0.016, 1: 0.006}), 2)


def probe_steps(counts):
    return counts * thread_tuner.TURNS * (1 + thread_tuner.TURN_STEPS)


def test_candidates_are_the_budget_its_halves_and_one():
    assert candidates(1) == [1]
    assert candidates(2) == [2, 1]
    assert candidates(16) == [16, 8, 4, 2, 1]
    assert candidates(6) == [6, 3, 1]


def test_keeps_the_fastest_count_and_follows_a_change_of_load(machine):
    tuner = StepTuner()
    machine.run(tuner, 1 + probe_steps(3))         # the first call (compiling) is not timed
    assert tuner.choice == 1 and machine.current == 1
    machine.run(tuner, 2000)
    tail = machine.used[-2000:]
    assert tail.count(1) / len(tail) > 0.97        # the slower counts only while probing
    machine.costs = {4: 0.002, 2: 0.003, 1: 0.004}          # the machine went quiet
    machine.run(tuner, int(thread_tuner.MAX_GAP_SECONDS / 0.004) + probe_steps(3))
    assert tuner.choice == 4 and machine.current == 4


def test_scheduled_probes_cost_at_most_one_percent_and_thin_out(machine):
    tuner = StepTuner()
    machine.run(tuner, 1 + probe_steps(3))
    machine.used.clear()
    machine.run(tuner, 100000)                     # 300 s of 3 ms steps on one thread
    extra = sum(machine.costs[n] - machine.costs[1] for n in machine.used)
    assert extra < 0.01 * 100000 * machine.costs[1]
    assert tuner.probes <= 6                      # after 10, 20, 40, 80, 160 s of steps
    assert tuner.gap == thread_tuner.MAX_GAP_SECONDS


def test_a_clear_answer_ends_the_probe_after_one_turn(monkeypatch):
    """A quiet 2-core machine (the issue's MLP: 16 ms on two threads, 27 on one): three
    steps on one thread, not nine."""
    fake = _fake(monkeypatch, Machine({2: 0.016, 1: 0.027}), 2)
    tuner = StepTuner()
    fake.run(tuner, 1 + 120)
    assert tuner.choice == 2 and fake.used.count(1) == 1 + thread_tuner.TURN_STEPS
    assert tuner.probes == 1


class FlickeringMachine(Machine):
    """A flickering load: steps on two threads hit by time slices unevenly (100 or 160 ms,
    in turn), steps on one thread steady at 40 ms."""

    def __init__(self):
        super().__init__({2: 0.100, 1: 0.040})
        self.turn = 0

    def cost(self):
        if self.current == 1:
            return 0.040
        self.turn += 1
        return (0.100, 0.160)[self.turn % 2]


def test_a_current_choice_twice_as_slow_as_another_count_is_dropped(monkeypatch):
    """Too uneven for the probe to end after a turn, but both timed steps on two threads are
    twice as slow as one thread's: three steps on two threads, not nine."""
    fake = _fake(monkeypatch, FlickeringMachine(), 2)
    tuner = StepTuner()
    fake.run(tuner, 1 + 30)
    assert tuner.probes == 1 and tuner.choice == 1
    assert fake.used[1:].count(2) == 1 + thread_tuner.TURN_STEPS


def test_a_sudden_change_of_step_time_probes_at_once(machine):
    tuner = StepTuner()
    machine.run(tuner, 20000)                  # settled on 1 thread, probes far apart
    assert tuner.choice == 1 and tuner.gap > thread_tuner.GAP_SECONDS
    machine.costs = {4: 0.002, 2: 0.005, 1: 0.012}     # 1 thread now 4x slower than before
    machine.run(tuner, thread_tuner.RECENT + probe_steps(3))
    assert tuner.choice == 4


def test_inactive_when_not_adaptive(machine, monkeypatch):
    monkeypatch.setattr(threads, "adaptive", lambda: False)
    assert not thread_tuner.refresh() and machine.current == 4     # back to the budget
    x = np.ones((8, 3), np.float32)
    step = hiapi.graph.Function([hiapi.graph.placeholder((None, 3))], [], tuned=True)
    for _ in range(50):
        step(x)
    assert machine.used == [] and step.executable(((8, 3),)).tuner.probes == 0


def test_a_new_step_starts_from_the_last_choice(machine):
    first = StepTuner()
    machine.run(first, 1 + probe_steps(3))
    assert first.choice == 1
    machine.costs = {4: 0.010, 2: 0.006, 1: 0.005}
    second = StepTuner()
    assert second.choice == 1
    machine.run(second, 1 + probe_steps(3))
    assert second.choice == 1                     # 2 threads within the margin: kept


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


def _mlp():
    model = hiapi.Sequential([hiapi.Input((20,)), hiapi.layers.Dense(8, activation="relu"),
                              hiapi.layers.Dense(2, activation="softmax")])
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    x = np.random.default_rng(0).normal(size=(160, 20)).astype("float32")
    return model, x, (x[:, 0] > 0).astype("int64")


def _tuners(model, kind):
    return [e.tuner for key, f in model._step_functions.items() if key[0] == kind
            for e in f._executables.values()]


def test_what_a_step_learnt_outlives_the_fit_call(ticking):
    """Six short fits probe once, not six times; evaluate and predict have their own steps,
    which start from the count the train step chose and do not probe in a short call."""
    model, x, y = _mlp()
    for _ in range(6):
        model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    (train,) = _tuners(model, "train")
    assert train.probes == 1 and train.choice == 1
    model.evaluate(x, y, batch_size=8, verbose=0)
    model.predict(x, batch_size=8, verbose=0)
    for kind in ("test", "predict"):
        (tuner,) = _tuners(model, kind)
        assert tuner.choice == 1 and tuner.probes == 0 and ticking.current == 1


def test_a_step_that_started_from_another_s_choice_probes_when_that_costs_one_percent(machine):
    """Or after FIRST_PROBE_SECONDS of its own time, whichever comes first."""
    first = StepTuner()
    machine.run(first, 1 + probe_steps(3))
    assert first.choice == 1
    second = StepTuner()
    machine.run(second, 1 + thread_tuner.RECENT)
    expected_cost = machine.costs[1] * 2 * probe_steps(1)       # 2 other counts, one step more
    assert second.probes == 0 and second.cost == pytest.approx(expected_cost)
    due = int(min(expected_cost / thread_tuner.PROBE_SHARE, thread_tuner.FIRST_PROBE_SECONDS)
              / machine.costs[1])
    machine.run(second, due - thread_tuner.RECENT - 1)
    assert second.probes == 0 and not second.plan and set(machine.used[-due:]) == {1}
    machine.run(second, 1 + probe_steps(3))
    assert second.probes == 1 and second.choice == 1


def test_a_step_that_started_from_another_s_choice_follows_a_change_of_load(machine):
    first = StepTuner()
    machine.run(first, 1 + probe_steps(3))
    second = StepTuner()
    machine.run(second, 1 + thread_tuner.RECENT)
    machine.costs = {4: 0.002, 2: 0.005, 1: 0.012}     # 1 thread now 4x slower
    machine.run(second, 100)
    assert second.probes == 1 and second.choice == 4


def test_fit_runs_with_the_tuner_and_ends_on_a_candidate():
    model, x, y = _mlp()
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    assert threads.active_threads() in candidates(threads.budget().threads)
    threads.apply()


def test_a_fit_with_the_count_fixed_after_a_tuned_one_runs_with_the_full_budget(ticking,
                                                                             monkeypatch):
    model, x, y = _mlp()
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    assert ticking.current == 1
    monkeypatch.setattr(threads, "adaptive", lambda: False)     # e.g. set_num_threads since
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    assert ticking.current == 2


class SlicedMachine(Machine):
    """A busy machine: a step in which the scheduler's time slice ends takes 2.2 times as long
    (with 2 busy processes on 2 cores the MNIST MLP step took either ~3.7 or ~8 ms), at
    random, about every other step, whatever the thread count."""

    def __init__(self, costs):
        super().__init__(costs)
        self.random = np.random.default_rng(0)

    def cost(self):
        return self.costs[self.current] * (2.2 if self.random.random() < 0.5 else 1.0)


def _sliced(monkeypatch, costs):
    fake = _fake(monkeypatch, SlicedMachine(costs), 2)
    tuner = StepTuner()
    fake.run(tuner, 3000)
    return fake, tuner


def test_time_slices_do_not_hide_the_faster_count(monkeypatch):
    fake, tuner = _sliced(monkeypatch, {2: 0.004, 1: 0.008})
    assert tuner.choice == 2 and fake.used.count(2) / len(fake.used) > 0.9


@pytest.mark.parametrize("costs", [{2: 0.005, 1: 0.005}, {2: 0.004, 1: 0.005}])
def test_time_slices_do_not_trigger_probes(monkeypatch, costs):
    _, tuner = _sliced(monkeypatch, costs)
    assert tuner.probes < 4            # 3000 steps of ~0.01 s: the first and the scheduled


def test_a_cheap_step_that_started_from_another_s_choice_probes_after_one_percent(monkeypatch):
    """50 us steps: the estimate (9 steps more) makes the first probe due after 900 steps,
    45 ms, well before FIRST_PROBE_SECONDS."""
    fake = _fake(monkeypatch, Machine({2: 50e-6, 1: 90e-6}), 2)
    first = StepTuner()
    fake.run(first, 1 + probe_steps(2))
    assert first.choice == 2
    second = StepTuner()
    fake.run(second, 1 + 890)
    assert second.probes == 0 and 1 not in fake.used[-890:]
    fake.run(second, 20 + probe_steps(2))
    assert second.probes == 1 and second.choice == 2
