"""LossScaleOptimizer: overflow skips the step and halves the scale; good steps grow it;
unscaled updates equal the inner optimizer's; compile wraps the optimizer for float16."""
import numpy as np
import pytest

import hiapi
from hiapi import layers, mixed_precision
from hiapi.optimizers import SGD, Adam, LossScaleOptimizer

RNG = np.random.default_rng(0)
X = RNG.normal(size=(32, 6)).astype(np.float32)
Y = RNG.integers(0, 3, 32)


def model_with(optimizer, policy="mixed_float16", seed=3):
    hiapi.utils.set_random_seed(seed)
    model = hiapi.Sequential([hiapi.Input((6,)), layers.Dense(8, activation="relu", dtype=policy),
                              layers.Dense(3, dtype=policy),
                              layers.Activation("softmax", dtype="float32")])
    model.compile(optimizer=optimizer, loss="sparse_categorical_crossentropy")
    return model


def state(model):
    return [w.copy() for w in model.get_weights()] + \
        [v.numpy().copy() for v in model.optimizer.inner_optimizer.variables]


def test_overflow_skips_the_step_and_halves_the_scale():
    optimizer = LossScaleOptimizer(Adam(0.01), initial_scale=2.0 ** 40)
    model = model_with(optimizer)
    model.train_on_batch(X, Y)          # builds the slots (this step overflows too)
    assert optimizer.dynamic_scale.numpy() == 2.0 ** 39
    before = state(model)
    model.train_on_batch(X, Y)          # 2**39 * gradient overflows float16 (max 65504)
    assert optimizer.dynamic_scale.numpy() == 2.0 ** 38
    assert optimizer.step_counter.numpy() == 0
    after = state(model)
    assert int(optimizer.iterations.numpy()) == 0          # no update was counted
    for old, new in zip(before, after):                    # weights, Adam's m and v: untouched
        np.testing.assert_array_equal(old, new)
    for _ in range(30):                                    # the scale comes down and it trains
        model.train_on_batch(X, Y)
    assert optimizer.dynamic_scale.numpy() < 2.0 ** 30
    assert int(optimizer.iterations.numpy()) > 0
    assert not all(np.array_equal(a, b) for a, b in zip(before, state(model)))


def test_scale_grows_after_dynamic_growth_steps_good_steps():
    optimizer = LossScaleOptimizer(SGD(0.01), initial_scale=4.0, dynamic_growth_steps=3)
    model = model_with(optimizer)
    scales, counters = [], []
    for _ in range(7):
        model.train_on_batch(X, Y)
        scales.append(float(optimizer.dynamic_scale.numpy()))
        counters.append(int(optimizer.step_counter.numpy()))
    assert scales == [4, 4, 8, 8, 8, 16, 16]
    assert counters == [1, 2, 0, 1, 2, 0, 1]
    assert int(optimizer.iterations.numpy()) == 7


def test_unscaled_updates_equal_the_inner_optimizers():
    # a power-of-two scale is exact in float32: the same weights as without scaling
    plain = model_with(SGD(0.1, momentum=0.9), policy="float32")
    scaled = model_with(LossScaleOptimizer(SGD(0.1, momentum=0.9), initial_scale=1024.0),
                        policy="float32")
    for _ in range(3):
        plain.train_on_batch(X, Y)
        scaled.train_on_batch(X, Y)
    for a, b in zip(plain.get_weights(), scaled.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_compile_wraps_for_float16_only():
    mixed_precision.set_global_policy("mixed_float16")
    assert isinstance(model_with("adam").optimizer, LossScaleOptimizer)
    mixed_precision.set_global_policy("mixed_bfloat16")
    assert not isinstance(model_with("adam", policy=None).optimizer, LossScaleOptimizer)
    mixed_precision.set_global_policy("mixed_float16")
    model = hiapi.Sequential([hiapi.Input((6,)), layers.Dense(3)])
    model.compile(optimizer="sgd", loss="mse", auto_scale_loss=False)
    assert not isinstance(model.optimizer, LossScaleOptimizer)


def test_inner_optimizer_attributes_and_config():
    optimizer = LossScaleOptimizer(Adam(0.01), initial_scale=256.0, dynamic_growth_steps=10)
    assert optimizer.learning_rate is optimizer.inner_optimizer.learning_rate
    assert float(optimizer.learning_rate) == pytest.approx(0.01)
    optimizer.learning_rate = 0.02
    assert float(optimizer.inner_optimizer.learning_rate) == pytest.approx(0.02)
    assert optimizer.learning_rate_schedule is None
    config = hiapi.optimizers.serialize(optimizer)
    again = hiapi.optimizers.deserialize(config)
    assert isinstance(again, LossScaleOptimizer) and isinstance(again.inner_optimizer, Adam)
    assert (again.initial_scale, again.dynamic_growth_steps) == (256.0, 10)
    assert float(again.learning_rate) == pytest.approx(0.02)


@pytest.mark.parametrize("kwargs, message", [
    ({"inner_optimizer": "adam"}, "inner_optimizer"),
    ({"inner_optimizer": SGD(), "initial_scale": 0}, "initial_scale"),
    ({"inner_optimizer": SGD(), "dynamic_growth_steps": 0}, "dynamic_growth_steps")])
def test_bad_arguments_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        LossScaleOptimizer(**kwargs)


def test_custom_step_scales_and_skips_like_fit():
    # a hiapi.function step with a GradientTape: gradients of scale_loss(loss), then apply
    optimizer = LossScaleOptimizer(SGD(0.1), initial_scale=2.0 ** 40)
    model = model_with(optimizer)
    loss_fn = hiapi.losses.SparseCategoricalCrossentropy()

    @hiapi.function
    def train_step(x, y):
        with hiapi.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
            scaled = optimizer.scale_loss(loss)
        optimizer.apply(tape.gradient(scaled, model.trainable_weights),
                        model.trainable_weights)
        return loss

    before = model.get_weights()
    train_step(X, Y)                                  # overflows: skipped
    assert optimizer.dynamic_scale.numpy() == 2.0 ** 39
    for a, b in zip(before, model.get_weights()):
        np.testing.assert_array_equal(a, b)
    reference = model_with(SGD(0.1), policy="float32")
    optimizer.dynamic_scale.assign(1024.0)
    train_step(X, Y)                                  # a good step: the unscaled update
    reference.train_on_batch(X, Y)
    for a, b in zip(reference.get_weights(), model.get_weights()):
        np.testing.assert_allclose(a, b, rtol=0.05, atol=2e-3)    # float16 against float32
    assert int(optimizer.iterations.numpy()) == 1
