"""Sublinear memory: recomputed values are bit-identical, memory falls, budgets are honoured
or refused with the smallest achievable size, and the report shows it."""
import numpy as np
import pytest

import hiapi
from hiapi.graph import Function, Variable, grad, ops, placeholder
from hiapi.graph.function import parse_bytes

RNG = np.random.default_rng(12)


def deep_chain(depth=16, width=64):
    x = placeholder((None, width), "float64")
    rng = np.random.default_rng(3)                 # the same weights in every call
    weights = [Variable(rng.normal(size=(width, width)) * 0.15, name=f"w{i}")
               for i in range(depth)]
    h = x
    for w in weights:
        h = ops.tanh(ops.matmul(h, w.read))
    loss = ops.mean(ops.square(h))
    return x, loss, grad(loss, [w.read for w in weights])


def run(recompute, value):
    x, loss, grads = deep_chain()
    f = Function([x], [loss] + grads, recompute=recompute, forward_outputs=1, memory="plan")
    results = f(value)
    return results, next(iter(f._executables.values()))


def test_recomputation_is_bit_identical_and_saves_memory():
    value = RNG.normal(size=(256, 64))
    plain, kept = run(None, value)
    recomputed, sublinear = run("sublinear", value)
    for a, b in zip(plain, recomputed):
        np.testing.assert_array_equal(a, b)
    assert sublinear.recomputed_values > 0
    assert sublinear.plan.arena_bytes < 0.75 * kept.plan.arena_bytes
    order = sublinear.order
    first_recomputed = next(i for i, v in enumerate(order) if v.recompute)
    last_forward_matmul = max(i for i, v in enumerate(order)
                              if v.op.name == "matmul" and not v.recompute and
                              v.inputs[1].op.name == "read")
    assert first_recomputed > last_forward_matmul       # recomputation happens in backward


def test_budget_picks_a_plan_that_fits_or_names_the_smallest():
    value = RNG.normal(size=(256, 64))
    _, kept = run(None, value)
    budget = int(kept.plan.arena_bytes * 0.8)
    _, fitted = run(budget, value)
    assert fitted.plan.arena_bytes <= budget and fitted.recomputed_values > 0
    _, everything = run(kept.plan.arena_bytes, value)
    assert everything.recomputed_values == 0                     # cheapest: no recomputation
    with pytest.raises(ValueError, match=r"smallest achievable is [\d,]+ bytes"):
        run("1kB", value)


def test_parse_bytes():
    assert parse_bytes("2GB") == 2 * 10**9 and parse_bytes("512 MiB") == 512 * 2**20
    assert parse_bytes(1000) == 1000
    with pytest.raises(ValueError, match="cannot read a memory size"):
        parse_bytes("lots")


def test_compile_with_sublinear_memory_trains_identically():
    (x, y), _ = hiapi.datasets.mnist.load_data()
    x, y = x[:256, ..., None] / 255.0, y[:256]
    weights = []
    for memory in (None, "sublinear"):
        hiapi.utils.set_random_seed(5)
        model = hiapi.Sequential([
            hiapi.Input(shape=(28, 28, 1)), hiapi.layers.Conv2D(8, 3, activation="relu"),
            hiapi.layers.Conv2D(8, 3, activation="relu"), hiapi.layers.MaxPooling2D(),
            hiapi.layers.Flatten(), hiapi.layers.Dropout(0.3), hiapi.layers.Dense(10)])
        model.compile(optimizer="adam", memory=memory,
                      loss=hiapi.losses.SparseCategoricalCrossentropy(from_logits=True))
        model.fit(x, y, batch_size=64, epochs=1, verbose=0)
        weights.append(model.get_weights())
    for a, b in zip(*weights):
        np.testing.assert_array_equal(a, b)
    printed = []
    assert model.memory_report(print_fn=printed.append) is None   # once in a REPL, as summary
    text = "\n".join(printed)
    assert "lower bound (peak live)" in text and "recomputed values" in text
    with pytest.raises(ValueError, match="memory must be None or 'sublinear'"):
        model.compile(optimizer="sgd", loss="mse", memory="tiny")
