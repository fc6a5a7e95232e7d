"""The functional API in full: several inputs and outputs with per-output losses, weights and
metrics, shared layers, nested models, frozen layers, the training flag, sample and class
weights, regularizers and constraints."""
import numpy as np
import pytest

import hiapi
from hiapi import layers

RNG = np.random.default_rng(3)


def two_in_two_out():
    hiapi.utils.set_random_seed(0)
    image = hiapi.Input(shape=(6,), name="image")
    meta = hiapi.Input(shape=(2,), name="meta")
    shared = layers.Dense(5, activation="relu", name="shared")
    merged = layers.Concatenate()([shared(image), layers.Dense(3)(meta)])
    kind = layers.Dense(3, activation="softmax", name="kind")(merged)
    score = layers.Dense(1, name="score")(merged)
    return hiapi.Model([image, meta], [kind, score])


def data(n=64):
    image, meta = RNG.normal(size=(n, 6)), RNG.normal(size=(n, 2))
    kind = (image[:, 0] > 0).astype(int) + (meta[:, 0] > 0)
    score = image[:, :1] - meta[:, 1:]
    return [image, meta], [kind, score]


def test_multi_input_multi_output_losses_weights_and_metrics():
    model = two_in_two_out()
    model.compile(optimizer=hiapi.optimizers.Adam(0.01),
                  loss={"kind": "sparse_categorical_crossentropy", "score": "mse"},
                  loss_weights={"kind": 1.0, "score": 0.5},
                  metrics={"kind": ["accuracy"]})
    x, y = data()
    history = model.fit(x, y, epochs=3, batch_size=16, verbose=0)
    assert set(history.history) == {"loss", "kind_loss", "score_loss", "kind_accuracy"}
    logs = model.evaluate(x, y, verbose=0, return_dict=True)
    assert logs["loss"] == pytest.approx(logs["kind_loss"] + 0.5 * logs["score_loss"],
                                         rel=1e-5)
    kind, score = model.predict(x, verbose=0)
    assert kind.shape == (64, 3) and score.shape == (64, 1)
    assert logs["score_loss"] == pytest.approx(((score - y[1]) ** 2).mean(), rel=1e-4)


def test_losses_as_a_list_and_unknown_output_name():
    model = two_in_two_out()
    model.compile(optimizer="sgd", loss=["sparse_categorical_crossentropy", "mse"])
    x, y = data(16)
    assert len(model.train_on_batch(x, y)) == 3           # loss, kind_loss, score_loss
    model.compile(optimizer="sgd", loss={"kind": "mse", "nope": "mse"})
    with pytest.raises(ValueError, match=r"unknown outputs \['nope'\]"):
        model.fit(x, y, verbose=0)


def test_shared_layer_weights_are_counted_once_and_trained_together():
    inputs = hiapi.Input(shape=(4,))
    shared = layers.Dense(4, activation="tanh")
    model = hiapi.Model(inputs, shared(shared(inputs)))
    assert len(model.trainable_weights) == 2 and model.count_params() == 20
    kernel, bias = shared.get_weights()
    x = RNG.normal(size=(3, 4)).astype(np.float32)
    once = np.tanh(x @ kernel + bias)
    np.testing.assert_allclose(model.predict(x, verbose=0), np.tanh(once @ kernel + bias),
                               rtol=1e-5)


def test_frozen_layers_are_not_updated():
    model = hiapi.Sequential([hiapi.Input(shape=(3,)), layers.Dense(4, name="frozen"),
                              layers.Dense(1)])
    model.get_layer("frozen").trainable = False
    model.compile(optimizer="sgd", loss="mse")
    before = model.get_weights()
    model.fit(RNG.normal(size=(32, 3)), RNG.normal(size=(32, 1)), epochs=2, verbose=0)
    after = model.get_weights()
    np.testing.assert_array_equal(after[0], before[0])
    np.testing.assert_array_equal(after[1], before[1])
    assert not np.array_equal(after[2], before[2])
    assert len(model.trainable_weights) == 2 and len(model.non_trainable_weights) == 2


def test_training_flag_is_honoured_by_dropout_and_batch_norm():
    model = hiapi.Sequential([hiapi.Input(shape=(10,)), layers.Dropout(0.5),
                              layers.BatchNormalization()])
    model.compile(optimizer="sgd", loss="mse")
    x = RNG.normal(size=(8, 10)).astype(np.float32)
    np.testing.assert_allclose(model.predict(x, verbose=0), x / np.sqrt(1 + 1e-3), rtol=1e-5)
    np.testing.assert_allclose(model(x, training=False), x / np.sqrt(1 + 1e-3), rtol=1e-5)
    trained = model(x, training=True)
    assert abs(trained.mean()) < 1e-5                      # batch statistics in training
    moving_mean = model.layers[1].moving_mean.numpy()
    assert np.abs(moving_mean).max() > 0                   # and the moving mean was updated


def test_sample_weight_and_class_weight():
    model = hiapi.Sequential([hiapi.Input(shape=(3,)), layers.Dense(2, activation="softmax")])
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    x, y = RNG.normal(size=(10, 3)), np.array([0, 1] * 5)
    w = RNG.uniform(size=10)
    p = model.predict(x, verbose=0)
    per_sample = -np.log(p[np.arange(10), y])
    assert model.evaluate(x, y, sample_weight=w, verbose=0, batch_size=10) == \
        pytest.approx((per_sample * w).sum() / 10, rel=1e-5)
    by_class = model.train_on_batch(x, y, class_weight={0: 1.0, 1: 3.0})
    assert by_class == pytest.approx((per_sample * np.where(y == 1, 3.0, 1.0)).mean(), rel=1e-5)
    with pytest.raises(ValueError, match="one weight per sample"):
        model.fit(x, y, sample_weight=np.ones((10, 2)), verbose=0)


def test_regularizers_add_to_the_loss_and_constraints_hold():
    model = hiapi.Sequential([
        hiapi.Input(shape=(4,)),
        layers.Dense(3, kernel_regularizer=hiapi.regularizers.L2(0.1),
                     bias_regularizer="l1", kernel_constraint="non_neg",
                     activity_regularizer=hiapi.regularizers.L1(0.01))])
    model.compile(optimizer=hiapi.optimizers.SGD(0.5), loss="mse")
    x, y = RNG.normal(size=(16, 4)), RNG.normal(size=(16, 3))
    model.fit(x, y, epochs=3, verbose=0)
    kernel, bias = model.get_weights()
    assert kernel.min() >= 0.0                                  # NonNeg after every update
    out = x @ kernel + bias
    expected = ((out - y) ** 2).mean() + 0.1 * (kernel ** 2).sum() + \
        0.01 * np.abs(bias).sum() + 0.01 * np.abs(out).sum()
    assert model.evaluate(x, y, batch_size=16, verbose=0) == pytest.approx(expected, rel=1e-4)


def test_model_inside_a_model_trains_the_inner_weights():
    inner = hiapi.Sequential([hiapi.Input(shape=(3,)), layers.Dense(3, activation="relu")],
                             name="inner")
    inputs = hiapi.Input(shape=(3,))
    outer = hiapi.Model(inputs, layers.Dense(1)(inner(inputs)))
    outer.compile(optimizer="sgd", loss="mse")
    before = inner.get_weights()[0].copy()
    outer.fit(RNG.normal(size=(16, 3)), RNG.normal(size=(16, 1)), epochs=1, verbose=0)
    assert not np.array_equal(inner.get_weights()[0], before)
    assert [l.name for l in outer.layers][1] == "inner"


def test_model_input_and_output_shape_are_its_own_as_in_keras():
    # Keras 3's Functional.input_shape / output_shape: the model's own tensors' shapes (one
    # shape for one tensor, a list for several), without the model being called anywhere
    model = two_in_two_out()
    assert model.input_shape == [(None, 6), (None, 2)]
    assert model.output_shape == [(None, 3), (None, 1)]
    inputs = hiapi.Input(shape=(128,))
    single = hiapi.Model(inputs, layers.Dense(1)(inputs))
    assert single.input_shape == (None, 128) and single.output_shape == (None, 1)
    stack = hiapi.Sequential([hiapi.Input(shape=(4,)), layers.Dense(2)])
    assert stack.input_shape == (None, 4) and stack.output_shape == (None, 2)


def test_input_takes_keras_batch_shape():
    inputs = hiapi.Input(batch_shape=(16, 10, 5))
    assert inputs.shape == (16, 10, 5)
    outputs = layers.Conv1D(32, 3)(inputs)
    model = hiapi.Model(inputs, outputs)
    assert model.output_shape == (16, 8, 32)
    assert model.predict(np.ones((16, 10, 5), np.float32), verbose=0).shape == (16, 8, 32)
    with pytest.raises(ValueError, match="shape or batch_shape"):
        hiapi.Input(shape=(5,), batch_shape=(2, 5))
    with pytest.raises(ValueError, match="batch_size or batch_shape"):
        hiapi.Input(batch_size=2, batch_shape=(2, 5))
