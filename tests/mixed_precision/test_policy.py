"""Dtype policies: names, the global policy, per-layer policies, what runs in which type."""
import numpy as np
import pytest

import hiapi
from hiapi import layers, mixed_precision
from hiapi.runtime.dtypes import BFLOAT16
from hiapi.graph import Function, grad, ops, placeholder
from check_op import check_op

# bfloat16 needs the ml_dtypes package (the bfloat16 extra; the dev extra installs it)
needs_bfloat16 = pytest.mark.skipif(BFLOAT16 is None, reason="ml_dtypes is not installed")
# computing in bfloat16 needs a backend with bfloat16 arrays: cupy has none (docs/gpu.md), and
# says so by name (tests/backends/test_cupy_backend.py)
computes_bfloat16 = pytest.mark.skipif(
    BFLOAT16 is None or hiapi.backends.get_backend().name == "cupy",
    reason="needs ml_dtypes, and a backend with bfloat16 arrays (cupy has none)")


@pytest.mark.parametrize("name, compute, variable", [
    ("mixed_float16", "float16", "float32"),
    pytest.param("mixed_bfloat16", "bfloat16", "float32", marks=needs_bfloat16),
    ("float32", "float32", "float32"), ("float64", "float64", "float64"),
    pytest.param("bfloat16", "bfloat16", "bfloat16", marks=needs_bfloat16)])
def test_policy_names(name, compute, variable):
    policy = mixed_precision.Policy(name)
    assert (policy.name, policy.compute_dtype, policy.variable_dtype) == \
        (name, compute, variable)
    assert mixed_precision.DTypePolicy.from_config(policy.get_config()) == policy
    assert repr(policy) == f'<DTypePolicy "{name}">'


def test_unknown_policy_is_named():
    with pytest.raises(ValueError, match="mixed_float61"):
        mixed_precision.Policy("mixed_float61")


@needs_bfloat16
def test_global_policy_is_the_config_one():
    assert mixed_precision.global_policy().name == "float32"
    mixed_precision.set_global_policy("mixed_bfloat16")
    assert hiapi.config.dtype_policy().name == "mixed_bfloat16"
    hiapi.config.set_dtype_policy("mixed_float16")
    assert mixed_precision.global_policy() == mixed_precision.Policy("mixed_float16")
    dense = layers.Dense(3)
    assert (dense.dtype, dense.compute_dtype) == ("float32", "float16")
    assert layers.Dense(3, dtype="float32").compute_dtype == "float32"
    assert layers.Dense(3, dtype=mixed_precision.Policy("mixed_bfloat16")).compute_dtype == \
        "bfloat16"


def test_layer_config_keeps_the_policy():
    dense = layers.Dense(3, dtype="mixed_float16")
    config = dense.get_config()
    assert config["dtype"] == "mixed_float16"
    assert layers.Dense.from_config(config).dtype_policy.name == "mixed_float16"


@pytest.mark.parametrize("policy, low", [
    ("mixed_float16", np.float16),
    pytest.param("mixed_bfloat16", BFLOAT16, marks=computes_bfloat16)])
def test_dense_computes_low_with_float32_weights(policy, low):
    dense = layers.Dense(4, dtype=policy)
    x = placeholder((None, 3), "float32")
    y = dense(x)
    assert y.dtype == np.dtype(low)
    assert [w.dtype for w in dense.weights] == [np.float32, np.float32]
    # the weight enters as a cast of the float32 read, and its gradient is float32
    kernel_grad, = grad(ops.cast(y, "float32").sum(), [dense.kernel.read])
    assert kernel_grad.dtype == np.float32
    data = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)
    value = Function([x], [ops.cast(y, "float32"), kernel_grad])(data)
    exact = data @ dense.kernel.numpy() + dense.bias.numpy()
    np.testing.assert_allclose(value[0], exact, rtol=2e-2, atol=2e-2)   # 16-bit rounding
    np.testing.assert_allclose(value[1], np.repeat(data.sum(0)[:, None], 4, 1), rtol=2e-2,
                               atol=2e-2)


def test_float32_last_layer_after_mixed_layers():
    mixed_precision.set_global_policy("mixed_float16")
    model = hiapi.Sequential([hiapi.Input((6,)), layers.Dense(8, activation="relu"),
                              layers.Dense(3), layers.Activation("softmax", dtype="float32")])
    dtypes = [var.dtype for var in (model.layers[0].output, model.layers[1].output,
                                    model.layers[2].output)]
    assert dtypes == [np.float16, np.float16, np.float32]
    out = model.predict(np.ones((2, 6), np.float32), verbose=0)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.sum(1), 1.0, rtol=1e-6)


def test_batch_normalization_statistics_in_float32():
    bn = layers.BatchNormalization(dtype="mixed_float16")
    x = placeholder((None, 4), "float32")
    y = bn(x, training=True)
    assert y.dtype == np.float16
    assert all(v.dtype == np.float32 for v in bn.weights)
    data = np.random.default_rng(1).normal(3.0, 2.0, (64, 4)).astype(np.float32)
    out = Function([x], ops.cast(y, "float32"))(data)
    np.testing.assert_allclose(out, (data - data.mean(0)) / np.sqrt(data.var(0) + 1e-3),
                               atol=5e-3)


@pytest.mark.parametrize("low", ["float16", pytest.param("bfloat16", marks=computes_bfloat16)])
def test_cast_gradient_finite_differences(low):
    # float64 -> 16 bits -> float64: the gradient of a cast is the cast of the gradient (an
    # identity almost everywhere); the finite differences need a step wide against 16-bit
    # rounding (bfloat16 keeps 8 bits of mantissa)
    x = np.random.default_rng(2).uniform(0.5, 2.0, (3, 4))
    out = check_op(lambda v: ops.cast(ops.cast(v, low), "float64") * 3.0, [x],
                   lambda v: v.astype(low if low == "float16" else BFLOAT16).astype(
                       np.float64) * 3.0, batch=True, eps=0.25, atol=0.1, rtol=0.05)
    assert out.dtype == np.float64
    x16 = placeholder((3,), low)
    g, = grad(ops.cast(x16, "float32").sum(), [x16])
    assert g.dtype == np.dtype(BFLOAT16 if low == "bfloat16" else low)


def test_loss_is_computed_in_float32():
    mixed_precision.set_global_policy("mixed_float16")
    model = hiapi.Sequential([hiapi.Input((4,)), layers.Dense(3, activation="softmax")])
    assert model.layers[-1].output.dtype == np.float16       # no float32 last layer here
    loss = hiapi.losses.SparseCategoricalCrossentropy()
    value = loss(placeholder((None,), "int64"), model.layers[-1].output)
    assert value.dtype == np.float32


@needs_bfloat16
def test_python_float_beside_bfloat16_stays_bfloat16():
    # ml_dtypes promotes bfloat16 with a Python float to float64; the graph keeps bfloat16,
    # as numpy keeps float16 beside a Python float
    x = placeholder((None, 3), "bfloat16")
    assert (x * 2.5).dtype == BFLOAT16 and (1.0 - x).dtype == BFLOAT16
    h = placeholder((None, 3), "float16")
    assert (h * 2.5).dtype == np.float16
