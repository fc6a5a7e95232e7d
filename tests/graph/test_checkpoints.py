"""Checkpoints chosen by bytes and recomputation cost (``memory/checkpoints.py``), the backward
order that frees gradients layer by layer (``memory/backward_order.py``) and the report's
account of the lower bound (``memory/lower_bound.py``), on the deep CNN of issue #15."""
import re

import numpy as np
import pytest

import hiapi
from hiapi import layers, losses
from hiapi.graph.memory import checkpoints, lower_bound


@pytest.fixture(autouse=True)
def planned_memory(monkeypatch):
    """The comparisons are between memory plans: CI's HIAPI_MEMORY=none run plans here too."""
    monkeypatch.setenv("HIAPI_MEMORY", "plan")


def deep_cnn(memory=None, budget=None, depth=16, size=64, filters=64):
    hiapi.utils.set_random_seed(0)
    model = hiapi.Sequential(
        [hiapi.Input(shape=(size, size, 3))] +
        [layers.Conv2D(filters, 3, padding="same", activation="relu") for _ in range(depth)] +
        [layers.GlobalAveragePooling2D(), layers.Dense(10)])
    model.compile(optimizer=hiapi.optimizers.SGD(0.01), memory=memory, memory_budget=budget,
                  loss=losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def data(batch, size=64):
    x = np.random.default_rng(0).normal(size=(batch, size, size, 3)).astype(np.float32)
    return x, np.random.default_rng(1).integers(0, 10, batch)


def planned(model, batch, size=64):
    """The train step's executable for this batch, compiled and planned but never run."""
    xs, ys = model._prepare(*data(batch, size))[:2]
    step = model._step("train", xs, ys)
    shapes = tuple(tuple(batch if d is None else d for d in v.op.shape) for v in step.inputs)
    return step.executable(shapes)


def values_bytes(plan):
    """The arena without planned kernel scratch (``memory/scratch.py``)."""
    return plan.arena_bytes - getattr(plan, "scratch_bytes", 0)


def activations(executable):
    """Planned bytes of the values less those that outlive the step (new weights and
    outputs): what recomputation can change."""
    order, specs = executable.order, executable.specs
    roots = {order[i] for i in executable.output_slots} | \
        {order[i] for _, i, _ in executable.update_slots}
    kept = sum(int(np.prod(specs[v].shape)) * specs[v].dtype.itemsize for v in roots)
    return values_bytes(executable.plan) - kept


def test_deep_cnn_plans_five_times_less_activation_memory(monkeypatch):
    # the network at batch 16: the ratio depends on shapes only (compiled, not run);
    # with fusion, as users run it (unfused, each ReLU gradient has a comparison temporary)
    monkeypatch.setenv("HIAPI_PASSES", "all")
    default = planned(deep_cnn(), 16)
    sublinear = planned(deep_cnn("sublinear"), 16)
    ratio = activations(default) / activations(sublinear)
    assert ratio >= 5.0, ratio
    one = 16 * 64 * 64 * 64 * 4                       # one activation, float32
    # the counted-values plan peaked at 12 activations; what is left at the peak is one
    # segment's recomputed activations and one layer's output and input gradients
    step, parts = lower_bound.peak_parts(sublinear)
    kinds = {p.kind: p.nbytes for p in parts}
    assert sum(kinds.values()) <= min(6.2 * one, sublinear.plan.lower_bound)
    assert kinds["recomputed activations"] >= 2 * one
    assert kinds["gradients and other temporaries"] >= 2 * one


def test_recomputation_costs_less_than_one_forward_pass():
    from hiapi.graph.memory.cost import flops
    executable = planned(deep_cnn("sublinear", depth=8, size=16), 8, size=16)
    extra = sum(flops(v, executable.specs) for v in executable.order if v.recompute)
    forward = sum(flops(v, executable.specs) for v in executable.order
                  if v.op.name == "conv2d" and not v.recompute)
    assert 0 < extra <= checkpoints.MAX_EXTRA_FORWARD * forward * 1.01


def test_backward_order_alone_halves_the_default_plan():
    # keeping every value (no recomputation) in the backward order: each layer's gradients die
    # as soon as its kernel gradient is taken
    default = planned(deep_cnn(size=32), 4, size=32)
    everything = planned(deep_cnn(budget=values_bytes(default.plan), size=32), 4, size=32)
    assert everything.recomputed_values == 0
    assert activations(everything) < 0.6 * activations(default)
    assert len(everything.direct_updates) == len(default.direct_updates)


def test_memory_budget_is_honoured_with_less_recomputation_for_more_memory():
    from hiapi.graph.memory.cost import flops
    default = planned(deep_cnn(depth=8, size=32), 4, size=32)
    # between the smallest plan and the default one: the kernel scratch no recomputation can
    # shrink is a larger share of the arena on some backends (cupy's im2col) than on others
    with pytest.raises(ValueError, match="smallest achievable") as error:
        planned(deep_cnn(budget=1, depth=8, size=32), 4, size=32)
    smallest = int(re.search(r"smallest achievable is ([\d,]+)", str(error.value))[1]
                   .replace(",", ""))
    assert smallest < default.plan.arena_bytes
    extra = []
    for fraction in (0.1, 0.5, 0.9):                # a budget counts kernel scratch too
        budget = int(smallest + (default.plan.arena_bytes - smallest) * fraction)
        fitted = planned(deep_cnn(budget=budget, depth=8, size=32), 4, size=32)
        assert fitted.plan.arena_bytes <= budget
        extra.append(sum(flops(v, fitted.specs) for v in fitted.order if v.recompute))
    assert extra[0] > extra[-1] and extra == sorted(extra, reverse=True)


def test_memory_budget_too_small_names_the_smallest():
    model = deep_cnn(budget="1MB", depth=4, size=16)
    with pytest.raises(ValueError, match=r"smallest achievable is [\d,]+ bytes"):
        planned(model, 4, size=16)


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_sublinear_training_equals_default_training(backend, monkeypatch):
    monkeypatch.setenv("HIAPI_BACKEND", backend)
    x, y = data(4, size=16)
    weights = []
    for memory in (None, "sublinear"):
        model = deep_cnn(memory, depth=6, size=16, filters=8)
        for _ in range(3):
            model.train_on_batch(x, y)
        weights.append(model.get_weights())
    for a, b in zip(*weights):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_report_says_what_is_left_in_the_lower_bound():
    model = deep_cnn("sublinear", depth=4, size=16, filters=8)
    model.train_on_batch(*data(4, size=16))
    printed = []
    model.memory_report(print_fn=printed.append)
    executable = list(list(model._step_functions.values())[-1]._executables.values())[-1]
    step, parts = lower_bound.peak_parts(executable)
    assert f"lower bound is at step {step}" in printed[0]
    assert all(f"{p.count} {p.kind}" in printed[0] for p in parts)
