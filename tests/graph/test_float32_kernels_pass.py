"""The float32_kernels pass: 16-bit inputs of the backend's listed ops go through float32
copies and the result is cast back; the graph before and after, the numbers, the switch."""
import numpy as np
import pytest

import hiapi
from hiapi.backends import get_backend
from hiapi.graph import Function, ops, placeholder
from hiapi.graph.passes import float32_kernels, optimize
from hiapi.graph.schedule import topological_order

RNG = np.random.default_rng(3)


def names(roots):
    return [(v.op.name, v.dtype.name) for v in topological_order(roots) if not v.op.is_source]


@pytest.fixture(autouse=True)
def no_passes_in_functions():
    hiapi.config.set_passes("none")
    yield
    hiapi.config.set_passes(None)


def graph():
    a, b = placeholder((None, 8), "float16"), placeholder((8, 4), "float16")
    product = ops.matmul(a, b)
    return [a, b], [ops.sum(product, 0), ops.relu(product)]


def test_listed_ops_run_in_float32_and_cast_back():
    inputs, roots = graph()
    assert names(roots) == [("matmul", "float16"), ("sum", "float16"), ("relu", "float16")]
    after = float32_kernels.run(roots, float32_ops=frozenset({"matmul", "sum"}))
    assert names(after) == [("cast", "float32"), ("cast", "float32"), ("matmul", "float32"),
                            ("cast", "float16"), ("cast", "float32"), ("sum", "float32"),
                            ("cast", "float16"), ("relu", "float16")]
    assert [r.dtype for r in after] == [np.float16, np.float16]
    x = RNG.normal(size=(5, 8)).astype(np.float16)
    w = RNG.normal(size=(8, 4)).astype(np.float16)
    got = Function(inputs, after)(x, w)
    exact = x.astype(np.float32) @ w.astype(np.float32)
    np.testing.assert_array_equal(got[0], exact.astype(np.float16).astype(np.float32).sum(0)
                                  .astype(np.float16))
    np.testing.assert_array_equal(got[1], np.maximum(exact.astype(np.float16), 0))


def test_nothing_listed_or_nothing_16_bit_changes_nothing():
    inputs, roots = graph()
    assert float32_kernels.run(roots) == roots
    a = placeholder((None, 8), "float32")
    wide = [ops.matmul(a, ops.constant(np.ones((8, 2), np.float32)))]
    assert float32_kernels.run(wide, float32_ops=frozenset({"matmul"})) == wide


def test_switched_off_by_name():
    _, roots = graph()
    on, _ = optimize(roots, enabled={"float32_kernels"}, float32_ops=frozenset({"matmul"}))
    off, _ = optimize(roots, enabled=set(), float32_ops=frozenset({"matmul"}))
    assert ("matmul", "float32") in names(on) and off == roots


def test_cpu_backends_list_their_gemms():
    assert {"matmul", "conv2d", "conv2d_filter_grad", "sum"} <= get_backend().float32_ops \
        or get_backend().name == "cupy"
