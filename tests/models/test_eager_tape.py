"""A GradientTape opened outside a traced step, as TensorFlow's eager training loops use it
(``hiapi.graph.eager_tape``): the block is traced, ``tape.gradient`` compiles and runs it once
per graph structure, and the tensors the block made hold their values."""
import numpy as np
import pytest

import hiapi
from hiapi import layers, ops
from hiapi.graph import eager_tape


def _mlp(seed=0):
    hiapi.utils.set_random_seed(seed)
    inputs = hiapi.Input(shape=(12,))
    hidden = layers.Dense(16, activation="relu")(inputs)
    return hiapi.Model(inputs, layers.Dense(3)(hidden))


def _batches(count=12, size=8):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((count * size, 12)).astype("float32")
    y = rng.integers(0, 3, count * size).astype("uint8")
    return [(x[i:i + size], y[i:i + size]) for i in range(0, len(x), size)]


def _train(step_fn_wraps, batches):
    """Keras's "training loop from scratch": ``step_fn_wraps`` wraps the step (identity for
    the eager loop, ``hiapi.function`` for the compiled one)."""
    model = _mlp()
    optimizer = hiapi.optimizers.Adam(learning_rate=1e-2)
    loss_fn = hiapi.losses.SparseCategoricalCrossentropy(from_logits=True)
    metric = hiapi.metrics.SparseCategoricalAccuracy()

    def step(x, y):
        with hiapi.GradientTape() as tape:
            logits = model(x, training=True)
            loss_value = loss_fn(y, logits)
        grads = tape.gradient(loss_value, model.trainable_weights)
        optimizer.apply(grads, model.trainable_weights)
        metric.update_state(y, logits)
        return loss_value

    step = step_fn_wraps(step)
    losses = [float(step(x, y)) for x, y in batches]
    return model, losses, float(metric.result())


def test_the_eager_loop_trains_as_the_compiled_one_and_compiles_once():
    eager_tape._compiled.clear()
    batches = _batches()
    model, losses, accuracy = _train(lambda fn: fn, batches)
    compiled_model, compiled_losses, compiled_accuracy = _train(hiapi.function, batches)
    # one graph structure for all the equal batches: one compiled function
    assert len(eager_tape._compiled) == 1
    assert losses[-1] < losses[0]
    np.testing.assert_allclose(losses, compiled_losses, rtol=1e-5)
    assert accuracy == compiled_accuracy
    for a, b in zip(model.get_weights(), compiled_model.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_tensors_of_the_block_hold_their_values_after_the_gradient():
    model = _mlp()
    x, y = _batches()[0]
    loss_fn = hiapi.losses.SparseCategoricalCrossentropy(from_logits=True)
    expected_logits = model.predict(x, verbose=0)
    with hiapi.GradientTape() as tape:
        logits = model(x, training=True)
        loss_value = loss_fn(y, logits)
        double = loss_value * 2.0
    grads = tape.gradient(loss_value, model.trainable_weights)
    assert all(isinstance(g, np.ndarray) for g in grads)
    np.testing.assert_allclose(logits.numpy(), expected_logits, rtol=1e-5, atol=1e-6)
    assert float(loss_value) == pytest.approx(float(loss_fn(y, expected_logits)), rel=1e-5)
    assert float(double) == pytest.approx(2 * float(loss_value))
    with hiapi.GradientTape() as tape:         # print() in the block shows the value
        shown = str(loss_fn(y, model(x)))
    assert "numpy=array(" in shown
    # outside a trace, a Var with a value is data: numpy, operators and hiapi.ops compute now
    assert isinstance(loss_value + 1.0, (np.ndarray, np.generic))
    assert f"{loss_value:.3f}" == f"{float(loss_value):.3f}"
    assert ops.argmax(logits, axis=-1).shape == (len(x),)
    assert model(logits[:, :0].sum() + x).shape == (len(x), 3)


def test_the_gradient_equals_finite_differences_of_the_loss():
    model = _mlp()
    x, y = _batches()[0]
    loss_fn = hiapi.losses.SparseCategoricalCrossentropy(from_logits=True)
    with hiapi.GradientTape() as tape:
        loss_value = loss_fn(y, model(x))
    bias_grad = tape.gradient(loss_value, model.trainable_weights[-1])
    bias = model.trainable_weights[-1]
    base, eps = bias.numpy(), 1e-2
    for i in range(3):
        values = []
        for sign in (1, -1):
            shifted = base.copy()
            shifted[i] += sign * eps
            bias.assign(shifted)
            values.append(float(loss_fn(y, model(x))))
        bias.assign(base)
        assert bias_grad[i] == pytest.approx((values[0] - values[1]) / (2 * eps), abs=1e-3)


def test_gradients_with_respect_to_watched_inputs_and_variables():
    v = hiapi.Variable(np.float32(3.0))
    with hiapi.GradientTape() as tape:
        y = v * v
    assert float(tape.gradient(y, v)) == 6.0 and float(y) == 9.0

    x = np.linspace(-1, 1, 6, dtype="float32").reshape(2, 3)
    with hiapi.GradientTape() as tape:
        tape.watch(x)
        z = ops.sum(ops.tanh(x) * 2.0)
    np.testing.assert_allclose(tape.gradient(z, x), 2 * (1 - np.tanh(x) ** 2), rtol=1e-5)

    # a Variable given to a layer stays differentiable (an input being optimised)
    image = hiapi.Variable(np.ones((1, 3), "float32"))
    dense = layers.Dense(2, kernel_initializer="ones")
    with hiapi.GradientTape() as tape:
        out = dense(image)
    np.testing.assert_array_equal(tape.gradient(out, image), [[2.0, 2.0, 2.0]])

    # second order: an inner tape inside an outer eager one is traced with it
    w = hiapi.Variable(np.float32(2.0))
    with hiapi.GradientTape() as outer:
        with hiapi.GradientTape() as inner:
            cube = w ** 3
        first = inner.gradient(cube, w)
    assert float(outer.gradient(first, w)) == pytest.approx(12.0)    # 6 w
    assert float(first) == pytest.approx(12.0)                      # 3 w^2


def test_layer_state_updates_once_and_a_persistent_tape_repeats_its_dropout():
    hiapi.utils.set_random_seed(3)
    model = hiapi.Sequential([hiapi.Input(shape=(4,)), layers.Dense(8), layers.Dropout(0.5),
                              layers.BatchNormalization(), layers.Dense(1)])
    x = np.random.default_rng(1).standard_normal((16, 4)).astype("float32")
    norm = model.layers[2]
    before = norm.moving_mean.numpy()
    with hiapi.GradientTape(persistent=True) as tape:
        loss = ops.mean(model(x, training=True) ** 2)
        early = float(loss)           # read inside the block: the forward pass alone runs
    assert np.array_equal(norm.moving_mean.numpy(), before)
    first = tape.gradient(loss, model.trainable_weights)
    after = norm.moving_mean.numpy()
    assert not np.array_equal(after, before) and float(loss) == early
    second = tape.gradient(loss, model.trainable_weights)
    assert np.array_equal(norm.moving_mean.numpy(), after)     # the statistics moved once
    for a, b in zip(first, second):                            # the same dropout mask
        np.testing.assert_array_equal(a, b)


def test_losses_added_by_layers_join_the_loss_as_in_keras_guide():
    class ActivityRegularization(layers.Layer):
        def call(self, inputs):
            self.add_loss(1e-2 * ops.sum(inputs))
            return inputs

    hiapi.utils.set_random_seed(0)
    inputs = hiapi.Input(shape=(12,))
    hidden = ActivityRegularization()(layers.Dense(6, activation="relu")(inputs))
    model = hiapi.Model(inputs, layers.Dense(3)(hidden))
    loss_fn = hiapi.losses.SparseCategoricalCrossentropy(from_logits=True)
    x, y = _batches()[0]

    def step(x, y):
        with hiapi.GradientTape() as tape:
            logits = model(x, training=True)
            loss_value = loss_fn(y, logits)
            loss_value += sum(model.losses)
        return tape.gradient(loss_value, model.trainable_weights), loss_value

    eager_grads, eager_loss = step(x, y)
    compiled_grads, compiled_loss = hiapi.function(step)(x, y)
    assert float(eager_loss) == pytest.approx(float(compiled_loss), rel=1e-6)
    for a, b in zip(eager_grads, compiled_grads):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


def test_a_gan_step_mixes_eager_calls_and_two_tapes():
    hiapi.utils.set_random_seed(0)
    generator = hiapi.Sequential([hiapi.Input(shape=(4,)), layers.Dense(6)])
    discriminator = hiapi.Sequential([hiapi.Input(shape=(6,)), layers.Dense(1)])
    loss_fn = hiapi.losses.BinaryCrossentropy(from_logits=True)
    d_optimizer, g_optimizer = hiapi.optimizers.Adam(1e-2), hiapi.optimizers.Adam(1e-2)
    real = np.random.default_rng(0).standard_normal((8, 6)).astype("float32") + 2.0
    g_weights = [w.numpy() for w in generator.trainable_weights]
    for _ in range(3):
        latent = hiapi.random.normal((8, 4))
        fake = generator(latent)                            # eager: an array
        combined = np.concatenate([fake, real])
        labels = np.concatenate([np.ones((8, 1)), np.zeros((8, 1))]).astype("float32")
        with hiapi.GradientTape() as tape:
            d_loss = loss_fn(labels, discriminator(combined))
        d_grads = tape.gradient(d_loss, discriminator.trainable_weights)
        d_optimizer.apply(d_grads, discriminator.trainable_weights)
        with hiapi.GradientTape() as tape:
            g_loss = loss_fn(np.zeros((8, 1), "float32"), discriminator(generator(latent)))
        g_grads = tape.gradient(g_loss, generator.trainable_weights)
        g_optimizer.apply(g_grads, generator.trainable_weights)
    assert all(not np.array_equal(a, w.numpy())
               for a, w in zip(g_weights, generator.trainable_weights))
    assert np.isfinite(float(d_loss)) and np.isfinite(float(g_loss))


def test_symbolic_tensors_without_data_say_so():
    inputs = hiapi.Input(shape=(3,))
    with pytest.raises(TypeError, match="holds no data"):
        float(ops.sum(layers.Dense(2)(inputs)))


def test_python_control_flow_on_a_tensor_takes_the_branch_its_value_says():
    x = hiapi.Variable(np.float32(-2.0))

    def taped():
        with hiapi.GradientTape() as tape:
            y = x * x * x if x > 0 else -x * 4.0     # TensorFlow's eager guide's pattern
        return tape.gradient(y, x)

    assert float(taped()) == -4.0
    x.assign(np.float32(2.0))
    assert float(taped()) == pytest.approx(12.0)
    with pytest.raises(TypeError, match="no truth value"):
        bool(hiapi.Input(shape=(2,)))



def test_fit_evaluate_predict_and_summary_inside_the_block_are_not_recorded():
    model = _mlp()
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    x, y = _batches()[0]
    loss_fn = hiapi.losses.SparseCategoricalCrossentropy(from_logits=True)
    with hiapi.GradientTape() as tape:
        predicted = model.predict(x, verbose=0)
        evaluated = model.evaluate(x, y, verbose=0)
        model.summary(print_fn=lambda *_: None)
        loss_value = loss_fn(y, model(x))
    grads = tape.gradient(loss_value, model.trainable_weights)
    assert isinstance(predicted, np.ndarray) and isinstance(evaluated, float)
    assert float(loss_value) == pytest.approx(float(loss_fn(y, predicted)), rel=1e-5)
    assert len(grads) == 4


def test_metrics_updated_inside_the_block_take_the_values_of_its_tensors():
    class TruePositives(hiapi.metrics.Metric):       # a user's metric, written with ops
        def __init__(self, name="tp", **kwargs):
            super().__init__(name=name, **kwargs)
            self.tp = self.add_variable(shape=(), initializer="zeros", name="tp")

        def update_state(self, y_true, y_pred, sample_weight=None):
            hits = ops.equal(ops.cast(y_true, "int32"),
                             ops.cast(ops.argmax(y_pred, axis=1), "int32"))
            self.tp.assign_add(ops.sum(ops.cast(hits, "float32")))

        def result(self):
            return self.tp

    model = _mlp()
    x, y = _batches()[0]
    loss_fn = hiapi.losses.SparseCategoricalCrossentropy(from_logits=True)
    accuracy, mean, positives = (hiapi.metrics.SparseCategoricalAccuracy(),
                                 hiapi.metrics.Mean(), TruePositives())
    with hiapi.GradientTape() as tape:
        logits = model(x, training=True)
        loss_value = loss_fn(y, logits)
        accuracy.update_state(y, logits)
        mean.update_state(loss_value, sample_weight=None)
        positives.update_state(y, logits)
        inside = float(accuracy.result())
    tape.gradient(loss_value, model.trainable_weights)
    expected = np.argmax(model.predict(x, verbose=0), axis=1) == y
    assert inside == pytest.approx(expected.mean())
    assert float(positives.result()) == expected.sum()
    assert float(mean.result()) == pytest.approx(float(loss_value), rel=1e-6)
