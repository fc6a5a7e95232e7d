"""conv2d_epilogue (conv + bias + relu as one op) and the pass that forms it."""
import numpy as np
import pytest

import hiapi
from hiapi.graph import Function, Variable, grad, ops, placeholder
from hiapi.graph.ops.conv_epilogue import conv2d_epilogue
from hiapi.graph.passes import conv_epilogue
from hiapi.graph.schedule import topological_order

from check_op import check_op
from numpy_references import conv2d as conv_reference

RNG = np.random.default_rng(14)


def names(roots):
    return [v.op.name for v in topological_order(roots) if not v.op.is_source]


@pytest.mark.parametrize("activation", [None, "relu"])
@pytest.mark.parametrize("strides, padding", [((1, 1), "valid"), ((2, 1), "same")])
def test_conv2d_epilogue_forward_and_gradients(activation, strides, padding):
    x, w, b = RNG.standard_normal((2, 5, 6, 3)), RNG.standard_normal((3, 2, 3, 4)), \
        RNG.standard_normal(4)

    def reference(x, w, b):
        y = conv_reference(x, w, strides, padding, (1, 1)) + b
        return np.maximum(y, 0) if activation else y
    check_op(lambda a, k, c: conv2d_epilogue(a, k, c, activation, strides, padding),
             [x, w, b], reference, batch=(True, False, False))


def test_conv2d_epilogue_refuses_a_wrong_bias_or_activation():
    x, w = placeholder((None, 5, 5, 3), "float32"), placeholder((3, 3, 3, 4), "float32")
    with pytest.raises(ValueError, match="bias must be a float32 vector of the 4 filters.*"
                                         r"shape \(5,\)"):
        conv2d_epilogue(x, w, placeholder((5,), "float32"))
    with pytest.raises(ValueError, match="activation must be one of.*got 'tanh'"):
        conv2d_epilogue(x, w, placeholder((4,), "float32"), "tanh")


def _layer(x, w, b):
    return ops.relu(ops.add(ops.conv2d(x, w, padding="same"), b))


def test_pass_fuses_conv_bias_relu_and_keeps_the_numbers():
    x = placeholder((None, 6, 6, 2), "float32")
    w = Variable(RNG.standard_normal((3, 3, 2, 4)).astype(np.float32))
    b = Variable(RNG.standard_normal(4).astype(np.float32))
    y = _layer(x, w.read, b.read)
    loss = ops.sum(ops.multiply(y, y))
    roots = [loss] + grad(loss, [w.read, b.read])
    assert {"conv2d", "add", "relu"} <= set(names(roots))
    fused = conv_epilogue.run(roots)
    assert "conv2d_epilogue" in names(fused) and "conv2d" not in names(fused)
    assert "relu" not in names(fused) and names(fused).count("add") == names(roots).count(
        "add") - 1
    value = RNG.standard_normal((3, 6, 6, 2)).astype(np.float32)
    hiapi.config.set_passes("none")
    try:
        before, after = Function([x], roots)(value), Function([x], fused)(value)
    finally:
        hiapi.config.set_passes(None)
    for a, e in zip(after, before):
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-5)


def test_pass_leaves_a_convolution_read_twice_and_a_matrix_bias():
    x = placeholder((None, 6, 6, 2), "float32")
    w = placeholder((3, 3, 2, 4), "float32")
    conv = ops.conv2d(x, w)
    shared = [ops.relu(ops.add(conv, placeholder((4,), "float32"))), conv]   # conv read twice
    assert names(conv_epilogue.run(shared)) == names(shared)
    not_a_vector = [ops.add(ops.conv2d(x, w), placeholder((4, 4), "float32"))]
    assert names(conv_epilogue.run(not_a_vector)) == names(not_a_vector)
    # the relu's input is read elsewhere too: only the bias joins the convolution
    pre = ops.add(ops.conv2d(x, w), placeholder((4,), "float32"))
    both = conv_epilogue.run([ops.relu(pre), ops.negative(pre)])
    assert names(both).count("conv2d_epilogue") == 1 and "relu" in names(both)


def _train(passes, steps=3):
    hiapi.config.set_passes(passes)
    try:
        hiapi.utils.set_random_seed(5)
        model = hiapi.Sequential([
            hiapi.Input(shape=(8, 8, 2)),
            hiapi.layers.Conv2D(4, 3, padding="same", activation="relu"),
            hiapi.layers.Conv2D(3, 3, strides=2), hiapi.layers.Flatten(),
            hiapi.layers.Dense(2)])
        model.compile(optimizer=hiapi.optimizers.SGD(0.05, momentum=0.9), loss="mse")
        data = np.random.default_rng(0)
        x = data.standard_normal((6, 8, 8, 2)).astype(np.float32)
        y = data.standard_normal((6, 2)).astype(np.float32)
        for _ in range(steps):
            model.train_on_batch(x, y)
        step = [f for key, f in model._step_functions.items() if key[0] == "train"][0]
        return model.get_weights(), step.pass_stats
    finally:
        hiapi.config.set_passes(None)


def test_training_is_the_same_with_the_pass_on_and_off():
    fused, stats = _train("all")
    plain, _ = _train("-conv_epilogue")
    reference, none_stats = _train("none")
    assert "conv_epilogue" in stats and none_stats == {"input": none_stats["input"]}
    assert stats["conv_epilogue"] == stats["simplify"] - 3   # two convs: 2 adds + 1 relu gone
    for a, b, c in zip(fused, plain, reference):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(a, c, rtol=1e-6, atol=1e-6)
