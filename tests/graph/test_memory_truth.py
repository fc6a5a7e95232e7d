"""The memory report is the truth (project issue #15): a training step's resident-set growth
is within 10 % of the total ``memory_report()`` states (arena with the kernels' planned scratch,
parameters, optimizer state, the executor's copies), on numpy and numba, default and sublinear,
for an MLP and a CNN; and kernel scratch is planned in the arena, never overlapping a value
alive at its step."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import hiapi
from hiapi import layers
from hiapi.graph.memory.report import memory_rows

WORKER = Path(__file__).with_name("memory_truth_worker.py")
BACKENDS = ["numpy", "numba"]


@pytest.fixture
def on_backend(request):
    """Switch to the parametrized backend for the test (skipped where it is not installed)."""
    name = request.param
    if name == "numba":
        pytest.importorskip("numba")
    previous = hiapi.backends.get_backend()
    hiapi.backends.set_backend(name)
    yield name
    hiapi.backends.set_backend(previous.name)


@pytest.mark.skipif(not os.path.exists("/proc/self/clear_refs"), reason="reads the resident "
                    "set from /proc and relies on glibc's MALLOC_MMAP_THRESHOLD_")
@pytest.mark.parametrize("backend", BACKENDS)
def test_step_resident_growth_is_the_report_total(backend):
    if backend == "numba":
        pytest.importorskip("numba")
    env = {key: value for key, value in os.environ.items()     # CI's HIAPI_MEMORY=none etc.
           if key not in ("HIAPI_MEMORY", "HIAPI_PASSES", "HIAPI_BACKEND")}
    env.update(MALLOC_MMAP_THRESHOLD_=str(1 << 20), OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1", HIAPI_NUM_THREADS="1")
    done = subprocess.run([sys.executable, str(WORKER), backend], capture_output=True,
                          text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    runs = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert len(runs) == 4
    for run in runs:
        total = run["rows"]["total"]
        assert total > 16 * 2**20                       # big enough for 10 % to mean something
        for measured in (run["growth"], run["peak_growth"] or run["growth"]):
            assert abs(measured - total) <= 0.10 * total, \
                f"{backend} {run['model']} {run['memory']}: the process grew " \
                f"{measured / 2**20:.1f} MiB, memory_report() says {total / 2**20:.1f} MiB " \
                f"({run['rows']})"
    cnn = [run for run in runs if run["model"] == "cnn"]
    assert all(run["rows"]["scratch"] > 0 for run in cnn)      # im2col columns are planned


def _conv_step(memory, monkeypatch):
    hiapi.utils.set_random_seed(0)
    model = hiapi.Sequential([hiapi.Input(shape=(12, 12, 3)),
                              layers.Conv2D(8, 3, padding="same", activation="relu"),
                              layers.Conv2D(8, 3, strides=2, activation="tanh"),
                              layers.GlobalAveragePooling2D(), layers.Dense(4)])
    model.compile("sgd", "sparse_categorical_crossentropy")
    x = np.random.default_rng(0).normal(size=(16, 12, 12, 3)).astype(np.float32)
    y = np.arange(16) % 4
    monkeypatch.setenv("HIAPI_MEMORY", memory)
    loss = model.train_on_batch(x, y)
    step = [f for key, f in model._step_functions.items() if key[0] == "train"][-1]
    return loss, [w.numpy() for w in model.weights], list(step._executables.values())[-1]


@pytest.mark.parametrize("on_backend", BACKENDS, indirect=True)
def test_scratch_is_planned_apart_from_live_values_and_changes_no_number(on_backend,
                                                                         monkeypatch):
    loss, weights, executable = _conv_step("plan", monkeypatch)
    loss_unplanned, weights_unplanned, unplanned = _conv_step("none", monkeypatch)
    assert loss == loss_unplanned
    for a, b in zip(weights, weights_unplanned):
        np.testing.assert_array_equal(a, b)
    plan, index = executable.plan, {v: i for i, v in enumerate(executable.order)}
    kinds = {v.op.name for v in plan.scratch}
    assert {"conv2d_filter_grad", "conv2d_input_grad"} <= kinds
    assert kinds & {"conv2d", "conv2d_epilogue"}         # the forward, fused with its bias or not
    for var, offset in plan.scratch.items():
        size, step = executable.scratch[var], index[var]
        assert offset + size <= plan.arena_bytes
        for owner, start in plan.offsets.items():
            live = plan.intervals[owner]
            if live.start <= step <= live.end:
                assert offset + size <= start or start + plan.nbytes[owner] <= offset, \
                    (var, owner)
    assert plan.arena_bytes == plan.activation_bytes + plan.scratch_bytes
    assert plan.lower_bound <= plan.arena_bytes
    rows = memory_rows(unplanned)
    assert rows["scratch"] == sum(unplanned.scratch.values()) > 0


def test_memory_budget_counts_kernel_scratch(monkeypatch):
    """A budget between the default plan's activations and its activations plus scratch must
    not be met by the default plan: the arena the step really allocates is over it."""
    monkeypatch.delenv("HIAPI_MEMORY", raising=False)

    def compiled(**memory):
        hiapi.utils.set_random_seed(0)
        model = hiapi.Sequential([hiapi.Input(shape=(16, 16, 8))] +
                                 [layers.Conv2D(8, 3, padding="same", activation="relu")
                                  for _ in range(4)] +
                                 [layers.GlobalAveragePooling2D(), layers.Dense(4)])
        model.compile("sgd", "sparse_categorical_crossentropy", **memory)
        model.train_on_batch(np.ones((16, 16, 16, 8), np.float32), np.arange(16) % 4)
        step = [f for key, f in model._step_functions.items() if key[0] == "train"][-1]
        return list(step._executables.values())[-1]

    everything = compiled(memory_budget="1GB").plan         # the least recomputation: none
    assert everything.scratch_bytes > 0
    budget = everything.activation_bytes + everything.scratch_bytes // 2
    try:
        fitted = compiled(memory_budget=budget).plan
    except ValueError as error:                             # or no plan is small enough
        assert "no recomputation plan fits" in str(error)
    else:
        assert fitted.arena_bytes <= budget


@pytest.mark.parametrize("on_backend", BACKENDS, indirect=True)
def test_a_step_allocates_no_array_memory_outside_the_plan(on_backend):
    """What the kernels use beyond the arena is bounded by a chunk (fused programs, dropout's
    random numbers, ufunc buffers), not proportional to the 4 MiB activations (max pooling's
    gradient works in planned scratch): traced by
    tracemalloc, which sees numpy's array allocations."""
    import tracemalloc
    rng = np.random.default_rng(0)
    mlp = hiapi.Sequential([hiapi.Input(shape=(512,)), layers.Dense(512, activation="relu"),
                            layers.Dropout(0.5), layers.Dense(512, activation="tanh"),
                            layers.Dense(10)])
    cnn = hiapi.Sequential([hiapi.Input(shape=(32, 32, 3)),
                            layers.Conv2D(32, 3, padding="same", activation="relu"),
                            layers.MaxPooling2D(), layers.Conv2D(32, 3, activation="relu"),
                            layers.Dropout(0.3), layers.GlobalAveragePooling2D(),
                            layers.Dense(10)])
    for model, shape in ((mlp, (2048, 512)), (cnn, (32, 32, 32, 3))):
        x, y = rng.normal(size=shape).astype(np.float32), np.arange(shape[0]) % 10
        model.compile("adam", hiapi.losses.SparseCategoricalCrossentropy(from_logits=True))
        model.train_on_batch(x, y)
        tracemalloc.start()
        try:
            start = tracemalloc.get_traced_memory()[0]
            model.train_on_batch(x, y)
            peak = tracemalloc.get_traced_memory()[1] - start
        finally:
            tracemalloc.stop()
        assert peak < 2 * 2**20, f"{model.layers[0].name}: a step allocated {peak:,} bytes"


@pytest.mark.parametrize("shape", [(), (5,), (3, 40_000), (70_001,)])
def test_chunked_random_numbers_are_the_reference_ones(shape):
    from hiapi.backends.splitmix import splitmix64_uniform, splitmix64_uniform_into
    out = np.empty(shape, np.float32)
    splitmix64_uniform_into(out, 7, 3, chunk=1000)
    assert out.tobytes() == splitmix64_uniform(np, shape, 7, 3).tobytes()
