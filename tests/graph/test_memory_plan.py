"""The memory planner: offsets never overlap for values alive together, the plan sits between
the lower and upper bounds, in-place execution only where the input dies, and the same numbers
as without planning on graphs built to trick it."""
import numpy as np
import pytest

import hiapi
from hiapi.graph import Function, Variable, grad, ops, placeholder
from hiapi.graph.memory import storage_bases

RNG = np.random.default_rng(21)


def both_ways(inputs, outputs, values, updates=()):
    planned = Function(inputs, outputs, updates, memory="plan")
    unplanned = Function(inputs, outputs, updates, memory="none")
    a, b = planned(*values), unplanned(*values)
    return planned, a, b


def executable(function):
    return next(iter(function._executables.values()))


def check_no_overlap(plan):
    owners = list(plan.offsets)
    for i, u in enumerate(owners):
        for v in owners[i + 1:]:
            iu, iv = plan.intervals[u], plan.intervals[v]
            if iu.start <= iv.end and iv.start <= iu.end:      # alive together
                assert plan.offsets[u] + plan.nbytes[u] <= plan.offsets[v] or \
                    plan.offsets[v] + plan.nbytes[v] <= plan.offsets[u], (u, v)


def mlp_step(depth=6, width=32):
    x = placeholder((None, width), "float64")
    weights = [Variable(RNG.normal(size=(width, width)) * 0.3, name=f"w{i}")
               for i in range(depth)]
    h = x
    for w in weights:
        h = ops.relu(ops.matmul(h, w.read))
    loss = ops.mean(ops.square(h))
    grads = grad(loss, [w.read for w in weights])
    return x, loss, [(w, w.read - 0.1 * g) for w, g in zip(weights, grads)]


def test_training_step_plan_is_valid_tight_and_exact():
    x, loss, updates = mlp_step()
    value = RNG.normal(size=(64, 32))
    planned = Function([x], loss, updates, memory="plan")
    unplanned = Function([x], loss, [(v, u) for v, u in updates], memory="none")
    start = [v.numpy() for v, _ in updates]
    a = planned(value)
    after_planned = [v.numpy() for v, _ in updates]
    for (v, _), s in zip(updates, start):
        v.assign(s)
    b = unplanned(value)
    assert a == b
    for (v, _), w in zip(updates, after_planned):
        np.testing.assert_array_equal(v.numpy(), w)
    plan = executable(planned).plan
    check_no_overlap(plan)
    assert plan.lower_bound <= plan.arena_bytes <= 1.1 * plan.lower_bound
    assert plan.arena_bytes < plan.upper_bound / 2


def test_fan_out_value_is_not_overwritten_while_read():
    x = placeholder((None, 16), "float64")
    shared = ops.exp(x)                            # read by three ops, at different times
    y = ops.tanh(shared) * 2.0
    z = ops.sqrt(shared + 1.0) + y
    w = ops.sum(shared * z)
    value = RNG.normal(size=(8, 16))
    _, a, b = both_ways([x], [w, z], [value])
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


def test_views_of_views_keep_their_storage_alive():
    x = placeholder((None, 4, 6), "float64")
    base = ops.exp(x)                              # arena storage
    view = ops.transpose(ops.reshape(base, (-1, 6, 4)), (0, 2, 1))   # view of a view
    later = ops.tanh(x) * 3.0                      # computed after base's last direct use
    y = ops.sum(view, axis=1) + ops.sum(later, axis=1)
    function, a, b = both_ways([x], y, [RNG.normal(size=(3, 4, 6))])
    np.testing.assert_array_equal(a, b)
    order = executable(function).order
    bases = storage_bases(order)
    view_vars = [v for v in order if v.op.name == "transpose"]
    assert view_vars and bases[view_vars[0]].op.name in ("exp", "fused_elementwise")


def test_in_place_only_when_the_input_dies_there():
    x = placeholder((None, 8), "float64")
    a = ops.exp(x)
    b = ops.tanh(a)                 # a read again below: tanh must not overwrite it
    c = ops.log(b + 2.0)
    d = a * c
    hiapi.config.set_passes("none")
    try:
        function, p, q = both_ways([x], d, [RNG.normal(size=(4, 8))])
    finally:
        hiapi.config.set_passes(None)
    np.testing.assert_array_equal(p, q)
    plan = executable(function).plan
    names = {var.op.name: host.op.name for var, host in plan.shares.items()}
    assert "tanh" not in names                       # a has a second reader
    assert names.get("add") == "tanh"                # b dies at b + 2, which dies at log:
    assert names.get("log") == "tanh"                # both run in b's buffer
    check_no_overlap(plan)


def test_updates_read_all_old_values_first():
    """w1 <- w2, w2 <- w1 swaps: every update sees the values from before the step."""
    w1, w2 = Variable(np.array([1.0]), name="w1"), Variable(np.array([2.0]), name="w2")
    x = placeholder((1,), "float64")
    f = Function([x], x, [(w1, w2.read * 1.0), (w2, w1.read * 1.0)])
    f(np.zeros(1))
    assert (w1.numpy()[0], w2.numpy()[0]) == (2.0, 1.0)


def test_planned_arena_is_reused_between_calls_and_sizes_are_reported():
    x, loss, updates = mlp_step(depth=3)
    f = Function([x], loss, updates, memory="plan")
    f(RNG.normal(size=(16, 32)))
    arena = executable(f).arena
    f(RNG.normal(size=(16, 32)))
    assert executable(f).arena is arena
    plan = executable(f).plan
    assert plan.upper_bound >= plan.arena_bytes >= plan.lower_bound > 0


def test_memory_setting(monkeypatch):
    monkeypatch.setenv("HIAPI_MEMORY", "nonsense")
    x = placeholder((2,))
    with pytest.raises(ValueError, match="HIAPI_MEMORY must be 'plan' or 'none'"):
        Function([x], x * 2.0)(np.ones(2, np.float32))
