"""Every graph pass: the graph before and after, and unchanged numbers; and the switches."""
import numpy as np
import pytest

import hiapi
from hiapi.backends import get_backend
from hiapi.graph import Function, Variable, grad, ops, placeholder
from hiapi.graph.passes import (constant_folding, cse, dead_code, fusion, gemm_accumulate,
                                optimize, simplify)
from hiapi.graph.passes.rewrite import count_ops
from hiapi.graph.schedule import topological_order

RNG = np.random.default_rng(8)


def names(roots):
    return [v.op.name for v in topological_order(roots) if not v.op.is_source]


def evaluate(inputs, roots, values):
    return Function(inputs, roots)(*values)


@pytest.fixture(autouse=True)
def no_passes_in_functions():
    """Functions here evaluate exactly the graph given to them."""
    hiapi.config.set_passes("none")
    yield
    hiapi.config.set_passes(None)


def test_dead_code_drops_identity_and_stop_gradient_and_no_op_updates():
    x = placeholder((None, 3))
    y = ops.identity(ops.stop_gradient(ops.exp(x)))
    assert names([y]) == ["exp", "stop_gradient", "identity"]
    (z,) = dead_code.run([y])
    assert names([z]) == ["exp"]
    v = Variable(np.zeros(2, np.float32))
    assert dead_code.live_updates([(v, v.read), (v, v.read + 1)])[0][1].op.name == "add"
    value = RNG.normal(size=(2, 3)).astype(np.float32)
    np.testing.assert_array_equal(evaluate([x], z, [value]), evaluate([x], y, [value]))


def test_cse_merges_equal_subexpressions_and_constants():
    x = placeholder((None, 4))
    a, b = ops.tanh(x * 2.0), ops.tanh(x * 2.0)
    y = a + b
    assert names([y]).count("tanh") == 2
    (z,) = cse.run([y])
    assert names([z]) == ["multiply", "tanh", "add"]
    assert z.inputs[0] is z.inputs[1]
    value = RNG.normal(size=(3, 4)).astype(np.float32)
    np.testing.assert_array_equal(evaluate([x], z, [value]), evaluate([x], y, [value]))


def test_cse_keeps_placeholders_and_random_draws_apart():
    p, q = placeholder((2,)), placeholder((2,))
    (z,) = cse.run([p + q])
    assert z.inputs[0] is not z.inputs[1]


def test_constant_folding():
    x = placeholder((None, 2))
    scale = ops.exp(ops.constant(np.array([0.0, 1.0], np.float32))) * 2.0
    y = x * scale
    assert count_ops([y]) == 3
    (z,) = constant_folding.run([y])
    assert names([z]) == ["multiply"]
    np.testing.assert_allclose(z.inputs[1].op.value, [2.0, 2 * np.e], rtol=1e-6)
    value = RNG.normal(size=(3, 2)).astype(np.float32)
    # folding evaluates on the host; a GPU's exp may differ from the host's in the last bit
    on_host = get_backend().xp is np
    np.testing.assert_allclose(evaluate([x], z, [value]), evaluate([x], y, [value]),
                               rtol=0 if on_host else 2e-7, atol=0)


def test_simplify_gathers_linear_terms():
    """x + 1 - 2 + x  ->  2*x - 1"""
    x = placeholder((None, 3), "float64")
    y = x + 1.0 - 2.0 + x
    assert names([y]) == ["add", "subtract", "add"]
    (z,) = simplify.run([y])
    assert names([z]) == ["multiply", "subtract"]
    assert z.inputs[1].op.value == 1.0 and z.inputs[0].inputs[0].op.value == 2.0
    value = RNG.normal(size=(4, 3))
    np.testing.assert_allclose(evaluate([x], z, [value]), 2 * value - 1, rtol=1e-15)


def test_simplify_walks_the_graph_a_fixed_number_of_times(monkeypatch):
    """Linear gathering once weighed each candidate tree by counting the whole graph under it,
    a walk per node: quadratic (88 s of a 110-step unrolled LSTM's compile)."""
    from hiapi.graph.passes import rewrite as rewrite_module
    walks = []

    def counting(roots):
        walks.append(1)
        return topological_order(roots)
    monkeypatch.setattr(rewrite_module, "topological_order", counting)
    monkeypatch.setattr(simplify, "topological_order", counting)
    x = placeholder((None, 3), "float64")
    h = x
    for _ in range(200):                  # a recurrence: each step's value is read twice
        h = ops.tanh(h * 0.5 + h - 1.0)
    y = h + 1.0 - 2.0 + h
    (z,) = simplify.run([y])
    assert len(walks) <= 3
    assert count_ops([z]) < count_ops([y])
    value = RNG.normal(size=(2, 3))
    np.testing.assert_allclose(evaluate([x], z, [value]), evaluate([x], y, [value]),
                               rtol=1e-12)


def test_simplify_local_rules():
    x = placeholder((None, 2, 3))
    y = ops.negative(ops.negative(x * 1.0 + 0.0))
    t = ops.transpose(ops.transpose(x, (0, 2, 1)), (0, 2, 1))
    r = ops.reshape(ops.reshape(x, (-1, 6)), (-1, 3, 2))
    (ys, ts, rs) = simplify.run([y, t, r])
    assert ys is x and ts is x
    assert names([rs]) == ["reshape"] and rs.inputs[0] is x
    value = RNG.normal(size=(2, 2, 3)).astype(np.float32)
    np.testing.assert_array_equal(evaluate([x], rs, [value]), value.reshape(2, 3, 2))


def test_simplify_keeps_shared_terms_and_broadcast_shapes():
    x = placeholder((None, 3))
    shared = x * 3.0
    y = shared + 1.0 + shared              # shared has two readers: it stays one node
    (z,) = simplify.run([y])
    value = RNG.normal(size=(2, 3)).astype(np.float32)
    np.testing.assert_allclose(evaluate([x], z, [value]), 6 * value + 1, rtol=1e-6)
    b = placeholder((3,))
    w = x + 0.0 * b                          # not x: the zero broadcasts b's shape in
    (kept,) = simplify.run([w])
    assert kept.shape == (None, 3)


def test_fusion_makes_one_op_of_an_elementwise_tree():
    x, b = placeholder((None, 4), "float64"), placeholder((4,), "float64")
    y = ops.sum(ops.tanh(x * 2.0 + b) * ops.sigmoid(x), axis=1)
    before = names([y])
    (z,) = fusion.run([y])
    assert names([z]) == ["fused_elementwise", "sum"]
    program = z.inputs[0].op.program
    assert [op.name for op, _ in program] == [n for n in before if n != "sum"]
    values = [RNG.normal(size=(5, 4)), RNG.normal(size=4)]
    # equal on numpy (the same kernels run); numba's compiled loop may differ by an ulp
    np.testing.assert_allclose(evaluate([x, b], z, values), evaluate([x, b], y, values),
                               rtol=1e-14, atol=0)


def test_fusion_does_not_swallow_values_read_twice():
    x = placeholder((None, 4))
    shared = ops.exp(x)
    y = ops.tanh(shared) + shared            # exp feeds two nodes: it stays materialised
    (z,) = fusion.run([y])
    fused = [v for v in topological_order([z]) if v.op.name == "fused_elementwise"]
    assert len(fused) == 1 and [op.name for op, _ in fused[0].op.program] == ["tanh", "add"]


def sgd_graph(momentum):
    """Weight gradient and update of a linear layer, as the optimizer builds them."""
    x, g = placeholder((None, 5), "float64"), placeholder((None, 3), "float64")
    lr = placeholder((), "float64")
    w = Variable(RNG.normal(size=(5, 3)), name="w")
    v = Variable(RNG.normal(size=(5, 3)), name="v")
    grad_w = ops.matmul(ops.transpose(x), g)
    if momentum:
        return [x, g, lr], momentum * v.read - lr * grad_w, (w, v)
    return [x, g, lr], w.read - lr * grad_w, (w, v)


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_gemm_accumulate_folds_the_update_into_the_gradient_gemm(momentum):
    inputs, update, (w, v) = sgd_graph(momentum)
    assert sorted(names([update])) == sorted(["transpose", "matmul", "multiply", "subtract"] +
                                            (["multiply"] if momentum else []))
    (z,) = gemm_accumulate.run([update])
    assert names([z]) == ["transpose", "negative", "gemm"]
    a, b, c, alpha, beta = z.inputs
    assert c is (v.read if momentum else w.read) and alpha.inputs == (inputs[2],)
    assert float(beta.op.value) == (momentum or 1.0)
    values = [RNG.normal(size=(4, 5)), RNG.normal(size=(4, 3)), np.array(0.05)]
    np.testing.assert_allclose(evaluate(inputs, z, values), evaluate(inputs, update, values),
                               rtol=1e-12)


def test_gemm_accumulate_negates_a_constant_scale_in_the_values_dtype():
    # w - 0.1 * (x.T @ g) in float64: alpha must be -0.1 in float64, not float32's -0.1
    inputs, _, (w, v) = sgd_graph(0.0)
    x, g, _ = inputs
    rate = ops.constant(np.array(0.1))
    update = w.read - rate * ops.matmul(ops.transpose(x), g)
    (z,) = gemm_accumulate.run([update])
    alpha = z.inputs[3]
    assert names([z])[-1] == "gemm" and alpha.dtype == np.float64
    assert float(alpha.op.value) == -0.1
    values = [RNG.normal(size=(4, 5)), RNG.normal(size=(4, 3))]
    np.testing.assert_allclose(evaluate(inputs[:2], z, values),
                               evaluate(inputs[:2], update, values), rtol=1e-15)


def test_gemm_accumulate_leaves_a_gradient_read_twice_and_broadcast_sums():
    inputs, _, (w, v) = sgd_graph(0.9)
    x, g, lr = inputs
    grad_w = ops.matmul(ops.transpose(x), g)
    clipped = [w.read - lr * grad_w, ops.sum(grad_w)]             # the gradient read twice
    assert gemm_accumulate.run(clipped) == clipped
    bias = ops.matmul(x, w.read) + placeholder((3,), "float64")   # c broadcasts: no GEMM's C
    assert gemm_accumulate.run([bias]) == [bias]


def test_gemm_writes_over_its_c_only():
    """The planner and the direct Variable updates may put the GEMM's output over c, never
    over a or b, which BLAS is still reading (at 64x64 OpenBLAS reads A while it writes C)."""
    w = Variable(RNG.normal(size=(64, 64)), name="w")
    x = placeholder((64, 64), "float64")
    update = w.read - 0.5 * ops.matmul(w.read, x)             # a is the Variable's own value
    (rewritten,) = gemm_accumulate.run([update])
    assert rewritten.op.name == "gemm" and rewritten.inputs[0] is w.read
    start, value = w.numpy(), RNG.normal(size=(64, 64))
    f = Function([x], [], [(w, rewritten)])
    f(value)
    assert next(iter(f._executables.values())).direct_updates == []
    np.testing.assert_allclose(w.numpy(), start - 0.5 * start @ value, rtol=1e-10, atol=1e-10)
    product = ops.matmul(x, x)             # planned in the arena, a and c of the GEMM
    (z,) = gemm_accumulate.run([product - 2.0 * ops.matmul(product, x)])
    np.testing.assert_allclose(Function([x], z)(value),
                               value @ value - 2.0 * (value @ value) @ value, rtol=1e-10,
                               atol=1e-9)


def test_pipeline_on_a_training_step_keeps_the_numbers():
    """The full pipeline on forward + backward + update of a small network."""
    x = placeholder((None, 5), "float64")
    w = Variable(RNG.normal(size=(5, 3)), name="w")
    h = ops.tanh(ops.matmul(x, w.read) * 1.0 + 0.0)
    loss = ops.mean(ops.square(h - 0.5) + h * 2.0 - h)
    (g,) = grad(loss, [w.read])
    roots = [loss, w.read - 0.1 * g]
    from hiapi.graph.passes import NAMES
    optimized, stats = optimize(roots, NAMES)
    assert stats["fusion"] < stats["input"]
    value = RNG.normal(size=(4, 5))
    for a, b in zip(evaluate([x], optimized, [value]), evaluate([x], roots, [value])):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_passes_switch_off_one_by_one(monkeypatch):
    hiapi.config.set_passes(None)
    x = placeholder((None, 3))
    y = ops.exp(x) * ops.exp(x)
    monkeypatch.setenv("HIAPI_PASSES", "-fusion")
    f = Function([x], y)
    f(np.ones((1, 3), np.float32))
    assert "fusion" not in f.pass_stats and f.pass_stats["cse"] == 2
    monkeypatch.setenv("HIAPI_PASSES", "none")
    g = Function([x], y)
    g(np.ones((1, 3), np.float32))
    assert g.pass_stats == {"input": 3}
    monkeypatch.setenv("HIAPI_PASSES", "cse,fuson")
    with pytest.raises(ValueError, match=r"unknown graph pass\(es\) \['fuson'\]"):
        Function([x], y)(np.ones((1, 3), np.float32))
