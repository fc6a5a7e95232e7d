"""Pipeline parallelism: ``Strategy(pipeline_stages=K)`` under real ``mpiexec -n 2`` and ``-n 4``
(K stages, 2 data-parallel replicas of 2 stages, or 2 stages of 2 tensor-parallel parts) trains exactly as one process on the same
global batch (float64, both schedules, an MLP with regularisers on several stages and a small
CNN), every rank logs the same History, rank 0's saved file holds the whole optimizer state;
plus the schedules, the split and the errors."""
import itertools
import json
import subprocess
import sys

import numpy as np
import pytest

import hiapi
from hiapi.distribute.pipeline import schedules, split
from hiapi.saving.archive import read_archive

from mpi import ROOT, WORKERS, run_mpi


def reference(tmp_path, kind, micro_batches, batch_size):
    subprocess.run([sys.executable, str(WORKERS / "pipeline.py"), str(tmp_path), "reference",
                    kind, str(micro_batches), "1", str(batch_size)], check=True, cwd=ROOT,
                   timeout=300)
    return load(tmp_path, "reference", 0)


def load(tmp_path, schedule, rank):
    weights = np.load(tmp_path / f"{schedule}_{rank}.npz")
    report = json.load(open(tmp_path / f"{schedule}_{rank}.json"))
    return [weights[f"arr_{i}"] for i in range(len(weights))], report


def optimizer_state(path):
    _, arrays = read_archive(path, "hiapi.model")
    return [arrays[f"optimizer/{i}"] for i in
            range(sum(1 for name in arrays if name.startswith("optimizer/")))]


@pytest.mark.parametrize("ranks,stages,parts,schedule,kind", [
    (2, 2, 1, "gpipe", "mlp"), (2, 2, 1, "1f1b", "cnn"), (4, 4, 1, "1f1b", "mlp"),
    (4, 4, 1, "gpipe", "cnn"),
    (4, 2, 1, "1f1b", "cnn"), (4, 2, 1, "gpipe", "mlp"),     # 2 replicas x 2 stages
    (4, 2, 2, "gpipe", "mlp"), (4, 2, 2, "1f1b", "cnn"),     # 2 stages x 2 tensor parts
    (2, 2, 1, "1f1b", "functional")])                       # hiapi.Model in one chain
def test_pipelined_training_equals_one_process(tmp_path, ranks, stages, parts, schedule, kind):
    micro_batches, replicas = (3 if kind == "cnn" else 4), ranks // (stages * parts)
    run_mpi(ranks, "pipeline.py", tmp_path, schedule, kind, micro_batches, stages, 24, parts,
            timeout=300)
    expected_weights, expected = reference(tmp_path, kind, micro_batches, 24 * replicas)
    for rank in range(ranks):
        weights, report = load(tmp_path, schedule, rank)
        for w, e in zip(weights, expected_weights):          # every stage's weights, shared
            np.testing.assert_allclose(w, e, rtol=1e-5, atol=1e-8)
        for key, values in expected["history"].items():      # same logs on every rank
            np.testing.assert_allclose(report["history"][key], values, rtol=1e-8)
        for key, value in expected["evaluate"].items():
            np.testing.assert_allclose(report["evaluate"][key], value, rtol=1e-8)
        explain = report["explain"]
        stage = rank // parts % stages
        assert len(explain["split"]) == stages and all(explain["split"])
        assert explain["replicas"] == replicas and explain["tensor_parallel"] == parts
        if parts > 1 and stage == stages - 1:      # the last stage's Dense pair is split
            assert explain["tensor_pairs_this_rank"] >= 1
        assert explain["activations_held"] == (
            micro_batches if schedule == "gpipe" else min(stages - stage, micro_batches))
        assert 0.0 < explain["measured_bubble"] <= explain["measured_idle_this_rank"] < 1.0
        imbalance = explain["measured_imbalance_per_stage"]     # the busiest stage's is 0
        assert len(imbalance) == stages and min(imbalance) == 0.0
        assert imbalance[explain["measured_bottleneck_stage"]] == 0.0
        assert explain["measured_idle_this_rank"] == pytest.approx(
            explain["measured_bubble"] + imbalance[stage], abs=1e-12)
        if stages == ranks:      # each stage plans less than the whole step (memory_report)
            assert report["arena_mib"] < expected["arena_mib"]
    saved_state = optimizer_state(tmp_path / f"{schedule}.hiapi")     # gathered (and joined)
    want_state = optimizer_state(tmp_path / "reference.hiapi")
    assert len(saved_state) == len(want_state) > 1
    for saved, want in zip(saved_state, want_state):
        np.testing.assert_allclose(saved, want, rtol=1e-5, atol=1e-8)


def test_pipeline_x_tensor_backup_resumes_equal_to_uninterrupted(tmp_path):
    """2 stages x 2 tensor parts: BackupAndRestore gathers the joined optimizer state, and a
    new run resumed from it gives each rank its stage's slots, sliced: epoch 2 equals the
    uninterrupted run's."""
    run_mpi(4, "tensor_resume.py", tmp_path, "mlp", 2, timeout=400)
    for rank in range(4):
        straight = np.load(tmp_path / f"straight_{rank}.npz")
        resumed = np.load(tmp_path / f"resumed_{rank}.npz")
        for name in straight.files:
            np.testing.assert_allclose(resumed[name], straight[name], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("ranks,mode,parts,replicas,wait", [
    (2, "pipeline", 2, 1, "spin"), (2, "pipeline", 2, 1, "yield"), (2, "tensor", 2, 1, ""),
    (4, "pipeline", 2, 2, ""), (4, "tensor", 2, 2, "")])
def test_train_on_batch_equals_one_process(tmp_path, ranks, mode, parts, replicas, wait):
    """train_on_batch's global batch is the replicas' samples: a replica's stages (or tensor
    parts) share theirs, so its gradient is not divided by the stages (parts) too. Stages
    that wait by spinning in MPI or by testing and yielding the core train alike."""
    run_mpi(ranks, "train_on_batch.py", tmp_path, mode, "mlp", parts, replicas, timeout=300,
            env={"HIAPI_PIPELINE_WAIT": wait})
    subprocess.run([sys.executable, str(WORKERS / "train_on_batch.py"), str(tmp_path),
                    "reference", "mlp", "1", str(replicas)], check=True, cwd=ROOT, timeout=300)
    want_weights = np.load(tmp_path / "reference_0.npz")
    want_logs = json.load(open(tmp_path / "reference_0.json"))
    logs = [json.load(open(tmp_path / f"{mode}_{rank}.json")) for rank in range(ranks)]
    for rank in range(ranks):
        weights = np.load(tmp_path / f"{mode}_{rank}.npz")
        assert len(weights) == len(want_weights)
        for name in want_weights:
            np.testing.assert_allclose(weights[name], want_weights[name], rtol=1e-5, atol=1e-8)
    per_replica = ranks // replicas                # each replica logs its own samples' loss
    for step, want in enumerate(want_logs):
        for key, value in want.items():
            mean = np.mean([logs[r * per_replica][step][key] for r in range(replicas)])
            np.testing.assert_allclose(mean, value, rtol=1e-6)
            for r in range(replicas):               # a replica's ranks agree
                assert len({logs[r * per_replica + i][step][key]
                            for i in range(per_replica)}) == 1


@pytest.mark.parametrize("stages,micro_batches", list(itertools.product([2, 3, 4], [1, 2, 4, 8, 16])))
def test_schedules_bubble_and_memory(stages, micro_batches):
    for schedule in (schedules.gpipe, schedules.one_f_one_b):
        orders = [schedule(k, stages, micro_batches) for k in range(stages)]
        for order in orders:          # each micro-batch forward once, then backward once
            assert sorted(order) == sorted([("F", m) for m in range(micro_batches)] +
                                           [("B", m) for m in range(micro_batches)])
            assert all(order.index(("F", m)) < order.index(("B", m))
                       for m in range(micro_batches))
        step, busy = schedules.simulate(stages, micro_batches, schedule, [1.0] * stages,
                                        [2.0] * stages)
        assert 1 - busy[0] / step == pytest.approx(schedules.ideal_bubble(stages,
                                                                          micro_batches))
    held = [schedules.peak_in_flight(schedules.one_f_one_b(k, stages, micro_batches))
            for k in range(stages)]
    assert held == [min(stages - k, micro_batches) for k in range(stages)]   # 1F1B: <= K
    assert all(schedules.peak_in_flight(schedules.gpipe(k, stages, micro_batches)) ==
               micro_batches for k in range(stages))                        # GPipe: M


def test_balanced_split_minimises_the_slowest_stage():
    rng = np.random.default_rng(0)

    def slowest(costs, starts):
        return max(f + b for f, b in split.stage_actions(costs, starts))
    for _ in range(30):
        costs = list(rng.integers(1, 50, size=int(rng.integers(3, 9))))
        stages = int(rng.integers(2, min(4, len(costs)) + 1))
        starts = split.balanced_split(costs, stages)
        best = min(slowest(costs, [0, *cut])
                   for cut in itertools.combinations(range(1, len(costs)), stages - 1))
        assert starts[0] == 0 and slowest(costs, starts) == pytest.approx(best)
    # equal Dense layers: a stage but the last runs its forward twice, the first computes no
    # input gradient, so 4 | 5 layers balance (4 + 4 + 4 + 3 = 5 * 3 matmuls each)
    assert split.balanced_split([3.0] * 9, 2) == [0, 4]
    assert [f + b for f, b in split.stage_actions([3.0] * 9, [0, 4])] == [15.0, 15.0]


def test_predicted_bubble_of_the_stages_as_they_run():
    """1F1B with stages of equal forward plus backward (the last one's forward inside its
    backward) idles (K-1)/(M+K-1); GPipe, whose last stage waits through the forward phase,
    more; an imbalanced split more on average over the stages."""
    for stages, micro_batches in itertools.product([2, 3, 4], [1, 2, 4, 8, 16]):
        balanced = [(3.0, 9.0)] * (stages - 1) + [(0.0, 12.0)]
        ideal = schedules.ideal_bubble(stages, micro_batches)
        one_f = schedules.predicted_bubble(stages, micro_batches, schedules.one_f_one_b,
                                           balanced)
        assert one_f == pytest.approx([ideal] * stages)
        gpipe = schedules.predicted_bubble(stages, micro_batches, schedules.gpipe, balanced)
        assert all(g >= i - 1e-12 for g, i in zip(gpipe, one_f))
        if micro_batches == 1:     # one micro-batch runs through the stages one at a time
            continue
        assert gpipe[0] > ideal + 0.01
        slow_last = balanced[:-1] + [(0.0, 14.0)]
        assert np.mean(schedules.predicted_bubble(stages, micro_batches, schedules.one_f_one_b,
                                                  slow_last)) > ideal


def test_idle_splits_into_the_bottleneck_bubble_and_imbalance():
    """Unequal stages: the slowest stage idles only for the fill and drain (the bubble); a
    faster one also waits M * (t_max - t_k) for it (its imbalance); idle = bubble + imbalance,
    from the schedule simulated and from measured busy times alike."""
    stages, micro_batches = 3, 8
    actions = [(1.0, 2.0), (1.0, 2.4), (0.0, 2.7)]      # stage 1 is the bottleneck, 3.4 each
    step, busy = schedules.simulate(stages, micro_batches, schedules.gpipe,
                                    [f for f, _ in actions], [b for _, b in actions])
    idle = schedules.predicted_bubble(stages, micro_batches, schedules.gpipe, actions)
    bubble, imbalance = schedules.bubble_and_imbalance(idle)
    assert bubble == pytest.approx(1 - micro_batches * 3.4 / step)
    assert imbalance == pytest.approx([micro_batches * (3.4 - t) / step for t in (3.0, 3.4, 2.7)])
    assert imbalance[1] == 0.0
    from hiapi.distribute.pipeline.stats import PipelineStats
    stats = PipelineStats()
    stats.stage = 0
    stats.record(10.0, [8.0, 9.0], 2, [0.5, 0.1, 0.2, 0.3])
    stats.record(10.0, [7.0, 9.0], 2, [0.5, 0.1, 0.4, 0.3])
    assert stats.idle == pytest.approx(0.25) and stats.bubble == pytest.approx(0.1)
    assert stats.imbalance == pytest.approx(0.15) and stats.bottleneck == 1
    assert stats.imbalance_per_stage == pytest.approx([0.15, 0.0])
    assert stats.step_bubble == pytest.approx([0.1, 0.1])
    assert stats.steady_receive_wait == pytest.approx(0.15)   # first and last are fill, drain


def test_waiting_is_chosen_by_oversubscription_or_by_name(monkeypatch):
    from hiapi.distribute.pipeline import waiting
    assert isinstance(waiting.for_communicator(None), waiting.Spinning)    # one process
    monkeypatch.setenv("HIAPI_PIPELINE_WAIT", "yield")
    assert isinstance(waiting.for_communicator(None), waiting.Yielding)
    monkeypatch.setenv("HIAPI_PIPELINE_WAIT", "nap")
    with pytest.raises(ValueError, match="HIAPI_PIPELINE_WAIT must be 'spin' or 'yield'"):
        waiting.for_communicator(None)


def test_memory_budget_moves_the_split_and_each_stage_fits(tmp_path):
    """2 stages, GPipe (stage 1 holds all 4 micro-batches entering it): the time-balanced cut
    after a Dense(512) leaves stage 1 over a 600,000-byte budget, so the split moves to a
    narrow boundary; every stage's planned forward + backward + held activations fit, the
    planner's backward is the arena the stage compiles, and training equals one process.
    At 500,000 bytes no split fits: every rank says which stage cannot; naming the
    time-balanced cut with pipeline_split at 600,000 fails saying which stage is over."""
    run_mpi(2, "pipeline_budget.py", tmp_path, "pipeline", 600_000, timeout=300)
    subprocess.run([sys.executable, str(WORKERS / "pipeline_budget.py"), str(tmp_path),
                    "reference", "0"], check=True, cwd=ROOT, timeout=300)
    want = np.load(tmp_path / "reference_0.npz")
    for rank in range(2):
        report = json.load(open(tmp_path / f"pipeline_{rank}.json"))
        assert report["balanced_split"] == [0, 2] and report["starts"] == [0, 3]
        assert report["memory_budget"] == 600_000
        planned = report["planned_stage_bytes"]
        assert all(stage["total"] <= 600_000 for stage in planned)
        assert planned[1]["held"] == 4 * 16 * 16 * 8    # GPipe: 4 x 16 rows x Dense(16), f64
        assert report["planned_arena_bytes_this_rank"] == planned[rank]["backward"]
        weights = np.load(tmp_path / f"pipeline_{rank}.npz")
        for name in want.files:
            np.testing.assert_allclose(weights[name], want[name], rtol=1e-5, atol=1e-8)
    failed = run_mpi(2, "pipeline_budget.py", tmp_path, "pipeline", 500_000, timeout=300,
                     check=False)                  # fit's guard aborts the job, on every rank
    assert failed.returncode != 0
    output = failed.stdout + failed.stderr
    for rank in range(2):
        assert f"[hiapi rank {rank}/2] fit failed" in output
    assert "MemoryError: Strategy: no split of model 'sequential' into 2 stages keeps every " \
        "stage under memory_budget=500,000 bytes: as stage 1, layers 'dense_2'..'dense_6'" \
        in " ".join(output.split())
    named = run_mpi(2, "pipeline_budget.py", tmp_path, "pipeline", 600_000, "dense_2",
                    timeout=300, check=False)          # the time-balanced cut, by name
    assert named.returncode != 0
    assert "MemoryError: Strategy: stage 1 of pipeline_split (layers 'dense_2'..'dense_6') " \
        "plans at least" in " ".join((named.stdout + named.stderr).split())


def test_memory_aware_split_is_the_fastest_split_that_fits():
    """Against every split: the smallest slowest-stage cost among those whose stages all fit,
    the time-balanced split when it fits, and an error naming the stage when none fits."""
    from hiapi.distribute.pipeline import memory_split

    class Planner:                       # a stage's memory: the sum of its layers'
        def __init__(self, memory, stages, budget):
            self.memory_of, self.stages, self.budget = memory, stages, budget
            self.layers = [hiapi.layers.Dense(1, name=f"l{i}") for i in range(len(memory))]
            self.model, self.rows = hiapi.Sequential(name="m"), 8

        def memory(self, k, a, b):
            return memory_split.StageMemory(0, int(sum(self.memory_of[a:b])), 0)

        def fits(self, k, a, b):
            return self.memory(k, a, b).total <= self.budget

    rng = np.random.default_rng(1)
    checked = 0
    for _ in range(60):
        n = int(rng.integers(3, 9))
        stages = int(rng.integers(2, min(4, n) + 1))
        costs = [float(c) for c in rng.integers(1, 50, size=n)]
        memory = list(rng.integers(1, 30, size=n))
        planner = Planner(memory, stages, int(rng.integers(20, 80)))
        starts, fitting = _check_memory_aware_split(costs, planner)
        if starts and split.balanced_split(costs, stages) in fitting:
            assert starts == split.balanced_split(costs, stages)
        checked += bool(starts)
    assert checked > 20


def _check_memory_aware_split(costs, planner):
    """``memory_aware_split`` against every split of ``costs`` into ``planner.stages``: the
    fastest of those that fit, or the error when none does. Returns (its split or None, the
    splits that fit)."""
    from hiapi.distribute.pipeline import memory_split
    n, stages = len(costs), planner.stages
    cost = split.StageCost(costs, stages)
    fitting = [[0, *cut] for cut in itertools.combinations(range(1, n), stages - 1)
               if all(planner.fits(k, a, b) for k, (a, b) in
                      enumerate(zip([0, *cut], [*cut, n])))]
    if not fitting:
        with pytest.raises(MemoryError, match="no split of model 'm' into"):
            memory_split.memory_aware_split(costs, planner)
        return None, fitting
    starts = memory_split.memory_aware_split(costs, planner)
    assert starts in fitting
    slowest = lambda s: max(cost(k, a, b) for k, (a, b) in enumerate(zip(s, s[1:] + [n])))
    assert slowest(starts) == pytest.approx(min(map(slowest, fitting)), rel=1e-6)
    return starts, fitting


def test_memory_aware_split_when_held_activations_depend_on_the_boundary():
    """A stage after the first holds the activations entering it, whose size depends on
    where it starts (after a wide layer: many bytes), so taking the most layers into the
    earlier stages is not always right: the split must still be the fastest that fits, and
    one must be found whenever one exists."""
    from hiapi.distribute.pipeline import memory_split

    class Planner:
        def __init__(self, memory, entering, stages, budget):
            self.memory_of, self.entering, self.stages = memory, entering, stages
            self.budget, self.rows = budget, 8
            self.layers = [hiapi.layers.Dense(1, name=f"l{i}") for i in range(len(memory))]
            self.model = hiapi.Sequential(name="m")

        def memory(self, k, a, b):
            held = 0 if k == 0 else int(self.entering[a])
            return memory_split.StageMemory(0, int(sum(self.memory_of[a:b])), held)

        def fits(self, k, a, b):
            return self.memory(k, a, b).total <= self.budget

    # three layers, two stages: the first stage fits all but the last layer, but the stage
    # starting at layer 2 holds too much; starting at layer 1 fits
    planner = Planner([5, 5, 5], [0, 1, 50], 2, 20)
    assert memory_split.memory_aware_split([1.0, 1.0, 10.0], planner) == [0, 1]
    rng = np.random.default_rng(2)
    checked = 0
    for _ in range(150):
        n = int(rng.integers(3, 9))
        stages = int(rng.integers(2, min(4, n) + 1))
        costs = [float(c) for c in rng.integers(1, 50, size=n)]
        planner = Planner(list(rng.integers(1, 20, size=n)), list(rng.integers(0, 40, size=n)),
                          stages, int(rng.integers(20, 80)))
        checked += bool(_check_memory_aware_split(costs, planner)[0])
    assert checked > 40


def test_functional_models_pipeline_as_a_chain_or_say_why_not():
    from hiapi.distribute.pipeline.chain import chain_layers
    layers = hiapi.layers
    x = inputs = hiapi.Input(shape=(4,))
    dense = [layers.Dense(4, name=f"d{i}") for i in range(3)]
    for layer in dense:
        x = layer(x)
    assert chain_layers(hiapi.Model(inputs, x)) == dense
    branch = dense[0](inputs)
    residual = hiapi.Model(inputs, layers.Add(name="add")([branch, dense[1](branch)]))
    with pytest.raises(NotImplementedError, match="layer 'add' takes several inputs"):
        chain_layers(residual)
    skip = hiapi.Model(inputs, layers.Dense(2, name="skip")(dense[2](dense[1](inputs)) + 1.0))
    with pytest.raises(NotImplementedError, match="is an op between layers"):
        chain_layers(skip)
    twice = hiapi.Model(inputs, dense[0](dense[0](inputs)))
    with pytest.raises(NotImplementedError, match="layer 'd0' is called twice"):
        chain_layers(twice)
    a, b = hiapi.Input(shape=(4,)), hiapi.Input(shape=(4,))
    with pytest.raises(NotImplementedError, match="has 2 inputs and 1 outputs"):
        chain_layers(hiapi.Model([a, b], layers.Add()([a, b])))


def test_split_by_name_and_errors():
    layers = [hiapi.layers.Dense(2, name=n) for n in "abcd"]
    assert split.split_from_names(layers, ["c"], 2) == [0, 2]
    with pytest.raises(ValueError, match=r"names layers \['x'\]"):
        split.split_from_names(layers, ["x"], 2)
    with pytest.raises(ValueError, match="in model order"):
        split.split_from_names(layers, ["c", "b"], 3)
    with pytest.raises(ValueError, match="2 names for pipeline_stages=3"):
        split.split_from_names(layers, ["c"] * 2 + ["d"], 3)
    with pytest.raises(ValueError, match="more than the model's 2 layers"):
        split.balanced_split([1, 1], 3)
    with pytest.raises(ValueError, match="tensor_parallel must be a positive integer"):
        hiapi.distribute.Strategy(pipeline_stages=2, tensor_parallel=0)
    with pytest.raises(ValueError, match="schedule must be one of"):
        hiapi.distribute.Strategy(pipeline_stages=2, schedule="zigzag")


def test_without_mpiexec_the_script_trains_in_one_process():
    with pytest.warns(UserWarning, match="all stages run in this one process"):
        strategy = hiapi.distribute.Strategy(pipeline_stages=2, micro_batches=3)
    assert isinstance(strategy, hiapi.distribute.PipelineStrategy)
    x = np.random.default_rng(0).normal(size=(30, 5)).astype("float32")
    y = x[:, :1] * 2

    def trained(strategy):
        hiapi.utils.set_random_seed(1)
        model = hiapi.Sequential([hiapi.Input(shape=(5,)), hiapi.layers.Dense(4),
                                  hiapi.layers.Dense(1)])
        if strategy is None:
            model.compile(optimizer="sgd", loss="mse")
        else:
            with strategy.scope():
                model.compile(optimizer="sgd", loss="mse")
        model.fit(x, y, batch_size=10, epochs=2, verbose=0)
        return model.get_weights()
    for a, b in zip(trained(strategy), trained(None)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_pipeline_example_trains_on_mnist_under_mpiexec(tmp_path):
    result = run_mpi(2, str(ROOT / "examples" / "pipeline_mnist.py"), "--epochs", "1",
                     "--train-samples", "1000", "--verbose", "0", timeout=300)
    assert "Pipeline: 2 stages x 4 micro-batches, schedule '1f1b'" in result.stdout
    accuracy = float(result.stdout.rsplit("test accuracy", 1)[1])
    assert accuracy >= 0.5
