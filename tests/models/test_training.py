"""fit / evaluate / predict end to end on a small real subset of MNIST, and the trainer's
Keras behaviours: History, validation_split, verbosity, callbacks, determinism, errors."""
import numpy as np
import pytest

import hiapi
from hiapi import layers


@pytest.fixture(scope="module")
def mnist_small():
    (x_train, y_train), (x_test, y_test) = hiapi.datasets.mnist.load_data()
    return (x_train[:3000] / 255.0, y_train[:3000]), (x_test[:1000] / 255.0, y_test[:1000])


def mlp(hidden=64, seed=0):
    hiapi.utils.set_random_seed(seed)
    model = hiapi.Sequential([hiapi.Input(shape=(28, 28)), layers.Flatten(),
                              layers.Dense(hidden, activation="relu"),
                              layers.Dense(10, activation="softmax")])
    model.compile(optimizer=hiapi.optimizers.SGD(learning_rate=0.1, momentum=0.9),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def test_fit_reaches_accuracy_on_real_mnist(mnist_small):
    (x, y), (x_test, y_test) = mnist_small
    model = mlp()
    history = model.fit(x, y, batch_size=64, epochs=5, validation_split=0.1, verbose=0)
    assert set(history.history) == {"loss", "accuracy", "val_loss", "val_accuracy"}
    assert history.epoch == [0, 1, 2, 3, 4]
    assert history.history["loss"][-1] < history.history["loss"][0]
    loss, accuracy = model.evaluate(x_test, y_test, verbose=0)
    assert accuracy >= 0.88, accuracy      # 3000 images, 5 epochs: measured 0.89-0.91 (seeds 0-2)
    probabilities = model.predict(x_test[:7], verbose=0)
    assert probabilities.shape == (7, 10)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, rtol=1e-5)
    assert (probabilities.argmax(1) == model.predict_on_batch(x_test[:7]).argmax(1)).all()
    np.testing.assert_allclose(model(x_test[:7].astype(np.float32)), probabilities, rtol=1e-5)


def test_evaluate_agrees_with_numpy_on_predictions(mnist_small):
    (x, y), _ = mnist_small
    model = mlp()
    model.fit(x[:500], y[:500], epochs=1, verbose=0)
    loss, accuracy = model.evaluate(x[:300], y[:300], batch_size=64, verbose=0)
    p = model.predict(x[:300], verbose=0).astype(np.float64)
    np.testing.assert_allclose(loss, -np.log(p[np.arange(300), y[:300]]).mean(), rtol=1e-4)
    assert accuracy == pytest.approx((p.argmax(1) == y[:300]).mean())
    assert model.evaluate(x[:300], y[:300], verbose=0, return_dict=True) == \
        {"loss": pytest.approx(loss), "accuracy": pytest.approx(accuracy)}


def test_same_seed_gives_identical_weights(mnist_small):
    (x, y), _ = mnist_small
    runs = []
    for _ in range(2):
        model = mlp(seed=123)
        model.fit(x[:600], y[:600], batch_size=50, epochs=2, verbose=0)
        runs.append(model.get_weights())
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)
    other = mlp(seed=124).get_weights()
    assert not np.array_equal(other[0], runs[0][0])


def test_validation_split_takes_the_last_samples(mnist_small):
    (x, y), _ = mnist_small
    model = mlp()
    seen = []

    class Spy(hiapi.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            seen.append(logs["val_loss"])

    model.fit(x[:400], y[:400], epochs=1, validation_split=0.25, shuffle=False, verbose=0,
              callbacks=[Spy()])
    expected = model.evaluate(x[300:400], y[300:400], verbose=0)[0]
    assert seen == [pytest.approx(expected, rel=1e-6)]


def test_validation_data_and_smaller_last_batch(mnist_small):
    (x, y), (x_test, y_test) = mnist_small
    model = mlp()
    history = model.fit(x[:130], y[:130], batch_size=64, epochs=1, verbose=0,
                        validation_data=(x_test[:50], y_test[:50]))
    assert "val_accuracy" in history.history
    train_step = next(f for k, f in model._step_functions.items() if k[0] == "train")
    assert sorted(s[0][0] for s in train_step._executables) == [2, 64]   # 64, 64, 2


def test_verbosity(mnist_small, capsys, monkeypatch):
    from hiapi.runtime import threads
    monkeypatch.setattr(threads, "_banner_shown", None)     # as in a fresh process
    (x, y), _ = mnist_small
    model = mlp()
    model.fit(x[:200], y[:200], epochs=2, verbose=0)
    assert capsys.readouterr().out == ""
    model.fit(x[:200], y[:200], epochs=2, verbose=2)
    banner, *lines = [l for l in capsys.readouterr().out.splitlines() if l.strip()]
    assert "thread budget" in banner            # once per process, then a line per epoch
    assert len(lines) == 4 and lines[0] == "Epoch 1/2" and "loss:" in lines[1]
    model.fit(x[:200], y[:200], epochs=1, verbose=1)
    out = capsys.readouterr().out
    assert "Epoch" not in out and "7/7" in out and "accuracy:" in out   # Keras: no header


def test_callbacks_hooks_and_stop_training(mnist_small):
    (x, y), _ = mnist_small
    events = []

    class Recorder(hiapi.callbacks.Callback):
        def on_train_begin(self, logs=None): events.append("train_begin")
        def on_epoch_begin(self, epoch, logs=None): events.append(f"epoch_begin {epoch}")
        def on_train_batch_end(self, batch, logs=None):
            events.append(f"batch {batch}")
            if batch == 1:
                self.model.stop_training = True
        def on_epoch_end(self, epoch, logs=None): events.append(f"epoch_end {epoch}")
        def on_train_end(self, logs=None): events.append("train_end")

    history = mlp().fit(x[:320], y[:320], batch_size=32, epochs=5, verbose=0,
                        callbacks=[Recorder()])
    assert events == ["train_begin", "epoch_begin 0", "batch 0", "batch 1", "epoch_end 0",
                      "train_end"]
    assert history.epoch == [0]


def test_on_batch_methods_and_weights_roundtrip(mnist_small):
    (x, y), _ = mnist_small
    model = mlp()
    before = model.get_weights()
    loss, accuracy = model.train_on_batch(x[:32], y[:32])
    assert np.isfinite(loss) and 0 <= accuracy <= 1
    after = model.get_weights()
    assert not np.array_equal(before[0], after[0])
    assert len(model.test_on_batch(x[:32], y[:32])) == 2
    model.set_weights(before)
    for a, b in zip(model.get_weights(), before):
        np.testing.assert_array_equal(a, b)


def test_functional_model_matches_sequential_with_same_weights(mnist_small):
    (x, y), _ = mnist_small
    sequential = mlp()
    inputs = hiapi.Input(shape=(28, 28))
    hidden = layers.Dense(64, activation="relu")(layers.Flatten()(inputs))
    functional = hiapi.Model(inputs, layers.Dense(10, activation="softmax")(hidden))
    functional.set_weights(sequential.get_weights())
    functional.compile(optimizer=hiapi.optimizers.SGD(learning_rate=0.1, momentum=0.9),
                       loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    for model in (sequential, functional):
        model.fit(x[:256], y[:256], batch_size=64, epochs=1, shuffle=False, verbose=0)
    for a, b in zip(sequential.get_weights(), functional.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
    assert [type(l).__name__ for l in functional.layers] == \
        ["InputLayer", "Flatten", "Dense", "Dense"]
    assert functional.get_layer(index=2).count_params() == 784 * 64 + 64


def test_model_used_as_a_layer():
    hiapi.utils.set_random_seed(0)
    inner = hiapi.Sequential([hiapi.Input(shape=(4,)), layers.Dense(3, activation="tanh")])
    inputs = hiapi.Input(shape=(4,))
    outer = hiapi.Model(inputs, layers.Dense(2)(inner(inputs)))
    x = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    kernel, bias = inner.get_weights()
    k2, b2 = outer.get_weights()[2:]
    np.testing.assert_allclose(outer.predict(x, verbose=0), np.tanh(x @ kernel + bias) @ k2 + b2,
                               rtol=1e-5, atol=1e-6)
    assert len(outer.trainable_weights) == 4


def test_sequential_builds_from_data_when_no_input_given(mnist_small):
    (x, y), _ = mnist_small
    model = hiapi.Sequential([layers.Flatten(), layers.Dense(10, activation="softmax")])
    text = []
    model.summary(print_fn=text.append)         # as Keras 3: no shapes or weights yet
    assert text[0].count("0 (unbuilt)") == 2
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    model.fit(x[:64], y[:64], epochs=1, verbose=0)
    assert model.count_params() == 7850


def test_summary_counts(capsys):
    model = mlp(hidden=512)
    model.summary()
    out = capsys.readouterr().out
    assert "Total params: 407,050" in out and "Trainable params: 407,050" in out
    assert "(None, 784)" in out and "dense_" in out


def test_one_hot_labels_with_categorical_crossentropy(mnist_small):
    (x, y), _ = mnist_small
    model = mlp()
    model.compile(optimizer=hiapi.optimizers.SGD(0.1), loss="categorical_crossentropy",
                  metrics=["accuracy"])
    history = model.fit(x[:500], hiapi.utils.to_categorical(y[:500], 10), epochs=2, verbose=0)
    assert history.history["accuracy"][-1] > 0.5


class TestErrors:
    def test_wrong_input_shape_names_model_and_shapes(self, mnist_small):
        (x, y), _ = mnist_small
        with pytest.raises(ValueError, match=r"Input 0 of model .* expected shape \(None, 28, 28\)"
                                             r", got shape \(100, 784\)"):
            mlp().fit(x[:100].reshape(100, 784), y[:100], verbose=0)

    def test_one_hot_labels_with_sparse_loss(self, mnist_small):
        (x, y), _ = mnist_small
        with pytest.raises(ValueError, match="sparse_categorical_crossentropy: labels of shape "
                                             r"\(None, 10\).*categorical_crossentropy"):
            mlp().fit(x[:64], hiapi.utils.to_categorical(y[:64], 10), verbose=0)

    def test_integer_labels_with_categorical_loss(self, mnist_small):
        (x, y), _ = mnist_small
        model = mlp()
        model.compile(optimizer="sgd", loss="categorical_crossentropy")
        with pytest.raises(ValueError, match="sparse_categorical_crossentropy"):
            model.fit(x[:64], y[:64], verbose=0)

    def test_non_integer_sparse_labels(self, mnist_small):
        (x, _), _ = mnist_small
        with pytest.raises(ValueError, match="class labels must be whole numbers.*got 0.5"):
            mlp().fit(x[:4], np.array([0.5, 1, 2, 3]), verbose=0)

    def test_label_out_of_range(self, mnist_small):
        (x, _), _ = mnist_small
        with pytest.raises(ValueError, match="label 12 is outside the 10 classes"):
            mlp().fit(x[:4], np.array([0, 1, 12, 3]), verbose=0)

    def test_sample_count_mismatch(self, mnist_small):
        (x, y), _ = mnist_small
        with pytest.raises(ValueError, match="same number of samples"):
            mlp().fit(x[:10], y[:9], verbose=0)

    def test_unknown_names(self):
        model = hiapi.Sequential([hiapi.Input(shape=(3,)), layers.Dense(2)])
        with pytest.raises(ValueError, match="Unknown loss 'crossentropyy'"):
            model.compile(optimizer="sgd", loss="crossentropyy")
        with pytest.raises(ValueError, match="Unknown optimizer 'adamx'.*sgd"):
            model.compile(optimizer="adamx", loss="mse")
        model.compile(optimizer="sgd", loss="mse", metrics=["accurasy"])
        with pytest.raises(ValueError, match="Unknown metric 'accurasy'"):
            model.fit(np.ones((2, 3)), np.ones((2, 2)), verbose=0)

    def test_fit_before_compile(self):
        model = hiapi.Sequential([hiapi.Input(shape=(3,)), layers.Dense(2)])
        with pytest.raises(RuntimeError, match="must be compiled before fit"):
            model.fit(np.ones((2, 3)), np.ones((2, 2)))

    def test_nan_loss_stops_with_a_clear_error(self, mnist_small):
        (x, y), _ = mnist_small
        model = hiapi.Sequential([hiapi.Input(shape=(28, 28)), layers.Flatten(),
                                  layers.Dense(10)])
        model.compile(optimizer=hiapi.optimizers.SGD(learning_rate=1e30), loss="mse")
        with pytest.raises(FloatingPointError, match="loss became (nan|inf) at epoch 1"):
            model.fit(x[:256] * 1e10, np.ones((256, 10)), batch_size=32, epochs=2, verbose=0)

    def test_nan_in_data(self, mnist_small):
        (x, y), _ = mnist_small
        bad = x[:8].copy()
        bad[3, 4, 5] = np.nan
        with pytest.raises(ValueError, match="contains 1 NaN or infinite"):
            mlp().fit(bad, y[:8], verbose=0)

    def test_data_read_once_for_nan_while_it_stays_the_same_array(self, mnist_small,
                                                                 monkeypatch):
        """A second ``fit`` on the same array does not read it all again; a new array, or the
        a view of it, is checked; a NaN written in place later still stops ``fit``, at the
        loss (data.check_finite's cache)."""
        from hiapi.models import data
        reads = []
        monkeypatch.setattr(data, "all_finite", lambda a: reads.append(a.shape) or
                            bool(np.isfinite(a).all()))
        (x, y), _ = mnist_small
        x, y, model = x[:64].copy(), y[:64], mlp()
        model.fit(x, y, verbose=0)
        model.fit(x, y, verbose=0)
        assert reads == [(64, 28, 28)]
        bad = x.copy()
        bad[5, 1, 1] = np.inf
        with pytest.raises(ValueError, match="contains 1 NaN or infinite"):
            model.fit(bad, y, verbose=0)
        part = x[:32]                       # a view: another array
        model.fit(part, y[:32], verbose=0)
        assert reads[-1] == (32, 28, 28)
        x[0, 0, 0] = np.nan
        with pytest.raises(FloatingPointError, match="loss became nan"):
            model.fit(x, y, verbose=0)
