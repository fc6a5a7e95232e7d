"""hiapi.GradientTape with tf.GradientTape's interface, and hiapi.function, which traces a
Python function of tensors (models, tapes, optimizers, metrics) into one compiled step."""
import numpy as np
import pytest

import hiapi
from hiapi import layers, ops


def test_gradients_of_variables_lists_dicts_and_watched_tensors():
    w = hiapi.graph.Variable(np.array([1.0, 2.0], "float32"), name="w")
    b = hiapi.graph.Variable(np.float32(0.5), name="b")

    @hiapi.function
    def step(x):
        with hiapi.GradientTape(persistent=True) as tape:
            tape.watch(x)
            loss = ops.sum(ops.square(x * w)) + b
        as_list = tape.gradient(loss, [w, b])
        as_dict = tape.gradient(loss, {"w": w, "x": x})
        return as_list, as_dict, tape.gradient(loss, w)

    x = np.array([3.0, -1.0], "float32")
    (dw, db), named, single = step(x)
    np.testing.assert_allclose(dw, 2 * x * x * w.numpy())
    np.testing.assert_allclose(db, 1.0)
    np.testing.assert_allclose(named["x"], 2 * x * w.numpy() ** 2)
    np.testing.assert_allclose(single, dw)


def test_stop_recording_unconnected_and_a_second_gradient_of_a_used_tape():
    w = hiapi.graph.Variable(np.float32(3.0), name="w")
    unused = hiapi.graph.Variable(np.zeros(2, "float32"), name="unused")

    @hiapi.function
    def step(x):
        with hiapi.GradientTape() as tape:
            kept = x * w
            with tape.stop_recording():
                frozen = x * w * w           # a constant to the tape
            loss = ops.sum(kept + frozen)
        return tape.gradient(loss, [w, unused], unconnected_gradients="zero")

    dw, dunused = step(np.array([1.0, 2.0], "float32"))
    assert float(dw) == pytest.approx(3.0)
    np.testing.assert_array_equal(dunused, [0.0, 0.0])

    @hiapi.function
    def twice(x):
        with hiapi.GradientTape() as tape:
            loss = ops.sum(x * w)
        tape.gradient(loss, w)
        return tape.gradient(loss, w)

    with pytest.raises(RuntimeError, match="persistent=True"):
        twice(np.ones(2, "float32"))


def test_without_watching_accessed_variables_only_watched_ones_have_gradients():
    a = hiapi.graph.Variable(np.float32(2.0))
    b = hiapi.graph.Variable(np.float32(3.0))

    @hiapi.function
    def step(x):
        with hiapi.GradientTape(watch_accessed_variables=False) as tape:
            tape.watch(a)
            loss = ops.sum(x * a * b)
        return tape.gradient(loss, [a, b], unconnected_gradients="zero")

    da, db = step(np.ones(2, "float32"))
    assert float(da) == pytest.approx(6.0) and float(db) == 0.0


def test_gradient_of_a_non_scalar_and_untaped_values_are_clear_errors():
    w = hiapi.graph.Variable(np.ones(2, "float32"))

    @hiapi.function
    def vector(x):
        with hiapi.GradientTape() as tape:
            y = x * w
        return tape.gradient(y, w)

    # a vector target stands for its sum, as in tf.GradientTape
    np.testing.assert_allclose(vector(np.array([2.0, 3.0], "float32")), [2.0, 3.0])
    # an eager tape differentiates what its block computed from tensors, not numpy values
    with hiapi.GradientTape() as tape:
        value = np.float32(1.0)
    with pytest.raises(TypeError, match="computed in the tape's block.*got float32"):
        tape.gradient(value, w)


def test_function_retraces_on_new_shapes_and_dtypes_only():
    calls = []

    @hiapi.function
    def double(x, scale=2.0):
        calls.append(x.shape)
        return x * scale

    np.testing.assert_allclose(double(np.ones((2, 3), "float32")), 2.0)
    double(np.zeros((2, 3), "float32"))
    assert double.trace_count == 1
    double(np.ones((4, 3), "float32"))
    double(np.ones((4, 3), "float64"))
    np.testing.assert_allclose(double(np.ones((4, 3), "float64"), scale=3.0), 3.0)
    assert double.trace_count == 4 and len(calls) == 4


def test_function_trains_a_model_with_an_optimizer_and_a_metric():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(128, 4)).astype("float32")
    y = (x[:, 0] + x[:, 1] > 0).astype("int64")
    model = hiapi.Sequential([hiapi.Input(shape=(4,)), layers.Dense(8, activation="relu"),
                              layers.Dense(2)])
    optimizer = hiapi.optimizers.Adam(0.05)
    loss_fn = hiapi.losses.SparseCategoricalCrossentropy(from_logits=True)
    accuracy = hiapi.metrics.SparseCategoricalAccuracy()

    @hiapi.function
    def train_step(xb, yb):
        with hiapi.GradientTape() as tape:
            logits = model(xb, training=True)
            loss = loss_fn(yb, logits)
        grads = tape.gradient(loss, model.trainable_weights)
        optimizer.apply_gradients(zip(grads, model.trainable_weights))
        accuracy.update_state(yb, logits)
        return loss, accuracy.result()

    first = None
    for epoch in range(8):
        accuracy.reset_state()
        for start in range(0, 128, 32):
            loss, acc = train_step(x[start:start + 32], y[start:start + 32])
            first = float(loss) if first is None else first
    assert float(loss) < 0.5 * first and acc > 0.9
    assert int(optimizer.iterations.numpy()) == 32


def test_stop_gradient_on_a_variable_and_custom_gradient_in_a_step():
    w = hiapi.graph.Variable(np.float32(2.0))

    @ops.custom_gradient
    def clipped_identity(x):
        return x * 1.0, lambda g: ops.clip(g, -0.1, 0.1)

    @hiapi.function
    def step(x):
        with hiapi.GradientTape() as tape:
            loss = ops.sum(clipped_identity(x * w)) + ops.sum(x * ops.stop_gradient(w))
        return tape.gradient(loss, w)

    # d/dw of sum(x*w) through the clipped identity: sum(x * clip(1)) = 0.1 * sum(x); the
    # stop_gradient term adds nothing
    assert float(step(np.array([1.0, 2.0], "float32"))) == pytest.approx(0.3, rel=1e-5)


@pytest.mark.parametrize("compiled", [False, True])
def test_jacobian_and_batch_jacobian_as_tensorflow_shapes_them(compiled):
    x = np.arange(8, dtype="float32").reshape(4, 2)
    w = hiapi.graph.Variable(np.linspace(-1, 1, 6, dtype="float32").reshape(2, 3), name="w")
    dense = hiapi.layers.Dense(2, activation="tanh")
    inputs = np.linspace(-1, 1, 15, dtype="float32").reshape(5, 3)

    def jacobians(x, inputs):
        with hiapi.GradientTape(persistent=True) as tape:
            tape.watch(inputs)
            y = ops.matmul(x, w)
            out = dense(inputs)
        return (tape.jacobian(y, w), tape.jacobian(y, [w, hiapi.graph.Variable(
            np.float32(1.0))]), tape.batch_jacobian(out, inputs))

    run = hiapi.function(jacobians) if compiled else jacobians
    of_w, (again, unconnected), per_sample = run(x, inputs)
    expected = np.einsum("ik,jl->ijkl", x, np.eye(3, dtype="float32"))   # d y_ij / d w_kl
    np.testing.assert_allclose(of_w, expected)
    np.testing.assert_allclose(again, expected)
    assert unconnected is None
    kernel, bias = (v.numpy() for v in dense.weights)
    slope = 1 - np.tanh(inputs @ kernel + bias) ** 2                    # (5, 2)
    np.testing.assert_allclose(per_sample, slope[:, :, None] * kernel.T[None], rtol=1e-5,
                               atol=1e-6)
    assert np.asarray(per_sample).shape == (5, 2, 3)
