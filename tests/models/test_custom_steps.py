"""Overriding train_step / test_step / predict_step, written as in Keras's "Customizing what
happens in fit()" guide (Keras 3's contract, and tf.keras 2's compiled_loss/compiled_metrics).
hiapi traces the step into its compiled graph, so each runs on numpy and numba alike."""
import numpy as np
import pytest

import hiapi
from hiapi import layers, ops


def regression(n=256, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 8)).astype("float32")
    y = x @ rng.normal(size=(8, 1)).astype("float32") + 0.5
    return x, y


class KerasThreeStep(hiapi.Model):
    def train_step(self, data):
        x, y = data
        with hiapi.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(y=y, y_pred=y_pred)
        trainable_vars = self.trainable_variables
        gradients = tape.gradient(loss, trainable_vars)
        self.optimizer.apply(gradients, trainable_vars)
        for metric in self.metrics:
            if metric.name == "loss":
                metric.update_state(loss)
            else:
                metric.update_state(y, y_pred)
        return {m.name: m.result() for m in self.metrics}


def functional(cls, units=1):
    inputs = hiapi.Input(shape=(8,))
    return cls(inputs, layers.Dense(units)(inputs))


def test_keras_three_train_step_learns(cpu_backend):
    x, y = regression()
    model = functional(KerasThreeStep)
    model.compile(optimizer=hiapi.optimizers.Adam(0.05), loss="mse", metrics=["mae"])
    history = model.fit(x, y, epochs=4, batch_size=32, verbose=0).history
    assert sorted(history) == ["loss", "mae"]
    assert history["loss"][-1] < 0.2 * history["loss"][0]
    assert history["mae"][-1] < history["mae"][0]
    logs = model.evaluate(x, y, verbose=0, return_dict=True)   # the default test_step
    assert sorted(logs) == ["loss", "mae"] and logs["loss"] < 0.2 * history["loss"][0]


def test_tf_keras_two_compiled_loss_and_metrics_with_sample_weights(cpu_backend):
    class TfKerasTwo(hiapi.Model):
        def train_step(self, data):
            x, y, sample_weight = hiapi.utils.unpack_x_y_sample_weight(data)
            with hiapi.GradientTape() as tape:
                y_pred = self(x, training=True)
                loss = self.compiled_loss(y, y_pred, sample_weight=sample_weight)
            grads = tape.gradient(loss, self.trainable_weights)
            self.optimizer.apply_gradients(zip(grads, self.trainable_weights))
            self.compiled_metrics.update_state(y, y_pred, sample_weight=sample_weight)
            return {m.name: m.result() for m in self.metrics}

    x, y = regression()
    weights = np.where(np.arange(256) % 2 == 0, 1.0, 0.0)
    y_noisy = np.where(weights[:, None] > 0, y, 100.0)      # zero-weighted samples are junk
    model = functional(TfKerasTwo)
    model.compile(optimizer=hiapi.optimizers.Adam(0.05), loss="mse",
                  weighted_metrics=["mse"])
    history = model.fit(x, y_noisy, sample_weight=weights, epochs=5, batch_size=32,
                        verbose=0).history
    assert history["loss"][-1] < 0.1 * history["loss"][0]
    assert np.mean((model.predict(x, verbose=0) - y) ** 2) < 0.5      # the junk was ignored


def test_lower_level_own_loss_metrics_and_custom_test_step(cpu_backend):
    class LowLevel(hiapi.Model):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.loss_tracker = hiapi.metrics.Mean(name="loss")
            self.mae_metric = hiapi.metrics.MeanAbsoluteError(name="mae")
            self.loss_fn = hiapi.losses.MeanSquaredError()

        def train_step(self, data):
            x, y = data
            with hiapi.GradientTape() as tape:
                y_pred = self(x, training=True)
                loss = self.loss_fn(y, y_pred)
            grads = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply(grads, self.trainable_variables)
            self.loss_tracker.update_state(loss)
            self.mae_metric.update_state(y, y_pred)
            return {"loss": self.loss_tracker.result(), "mae": self.mae_metric.result()}

        def test_step(self, data):
            x, y = data
            y_pred = self(x, training=False)
            self.loss_tracker.update_state(self.loss_fn(y, y_pred))
            self.mae_metric.update_state(y, y_pred)
            return {"loss": self.loss_tracker.result(), "mae": self.mae_metric.result()}

        @property
        def metrics(self):
            return [self.loss_tracker, self.mae_metric]

    x, y = regression()
    inputs = hiapi.Input(shape=(8,))
    model = LowLevel(inputs, layers.Dense(1)(inputs))
    model.compile(optimizer=hiapi.optimizers.SGD(0.05))            # no loss: the step has it
    history = model.fit(x, y, epochs=4, batch_size=32, validation_data=(x, y),
                        verbose=0).history
    assert history["loss"][-1] < 0.2 * history["loss"][0]
    assert abs(history["val_loss"][-1] - model.evaluate(x, y, verbose=0)[0]) < 1e-4


def test_predict_step_and_subclassed_model_with_custom_step(cpu_backend):
    class Doubling(hiapi.Model):
        def __init__(self):
            super().__init__()
            self.dense = layers.Dense(1)

        def call(self, inputs, training=None, mask=None):
            return self.dense(inputs)

        def predict_step(self, data):
            return self(data, training=False) * 2.0

    x, y = regression(64)
    model = Doubling()
    model.compile(optimizer="adam", loss="mse")
    model.fit(x, y, epochs=1, verbose=0)
    np.testing.assert_allclose(model.predict(x, verbose=0),
                               2.0 * (x @ model.dense.kernel.numpy() +
                                      model.dense.bias.numpy()), rtol=1e-4, atol=1e-5)


def test_a_step_that_fails_after_asking_for_updates_changes_nothing():
    class Broken(hiapi.Model):
        def train_step(self, data):
            x, y = data
            with hiapi.GradientTape() as tape:
                y_pred = self(x, training=True)
            grads = tape.gradient(ops.mean(y_pred), self.trainable_variables)
            self.optimizer.apply(grads, self.trainable_variables)
            raise ValueError("a mistake after the update was asked for")

    model = functional(Broken)
    model.compile(optimizer="sgd")
    before = model.get_weights()
    with pytest.raises(ValueError, match="a mistake after the update"):
        model.fit(*regression(32), verbose=0)
    for old, new in zip(before, model.get_weights()):
        np.testing.assert_array_equal(old, new)


def test_step_failing_at_run_time_leaves_variables_untouched():
    inputs = hiapi.Input(shape=(3,), dtype="int32")
    hidden = layers.Flatten()(layers.Embedding(10, 4, name="words")(inputs))
    model = KerasThreeStep(inputs, layers.Dense(1)(hidden))
    model.compile(optimizer="sgd", loss="mse")
    good = np.ones((8, 3), "int32")
    model.fit(good, np.ones((8, 1)), verbose=0)          # compiled, optimizer built
    before = model.get_weights() + [v.numpy() for v in model.optimizer.variables]
    bad = good.copy()
    bad[5, 1] = 50                                       # the Embedding fails mid-step
    with pytest.raises(Exception, match="words"):
        model.fit(bad, np.ones((8, 1)), verbose=0)
    after = model.get_weights() + [v.numpy() for v in model.optimizer.variables]
    for old, new in zip(before, after):
        np.testing.assert_array_equal(old, new)


def test_a_model_parallel_strategy_refuses_a_custom_step_by_name():
    class SplitsTheBuiltInStep(hiapi.models.distribution.Local):
        def train_function(self, model, xs, ys, weighted=False):
            raise AssertionError("never reached")

    model = functional(KerasThreeStep)
    model.compile(optimizer="sgd", loss="mse")
    model._strategy = SplitsTheBuiltInStep()
    with pytest.raises(NotImplementedError, match=r"SplitsTheBuiltInStep.*data-parallel"):
        model.fit(*regression(32), verbose=0)
