"""``add_loss`` and ``layer.losses`` / ``model.losses`` with Keras 3's contract, the extra losses
in the training and evaluation loss, and ``compile()`` without a loss when ``add_loss``
provides it (Keras's guide "Making new layers and models via subclassing")."""
import numpy as np
import pytest

import hiapi
from hiapi import layers, ops


class ActivityRegularizationLayer(layers.Layer):
    def __init__(self, rate=1e-2, **kwargs):
        super().__init__(**kwargs)
        self.rate = rate

    def call(self, inputs):
        self.add_loss(self.rate * ops.mean(inputs))
        return inputs


class OuterLayer(layers.Layer):
    def __init__(self):
        super().__init__()
        self.activity_reg = ActivityRegularizationLayer(1e-2)

    def call(self, inputs):
        return self.activity_reg(inputs)


def test_losses_of_the_last_call_reset_at_each_outer_call():
    layer = OuterLayer()
    assert len(layer.losses) == 0          # never called
    _ = layer(np.zeros((1, 1), np.float32))
    assert len(layer.losses) == 1 and layer.losses[0] == 0.0
    _ = layer(np.full((1, 1), 3.0, np.float32))
    assert len(layer.losses) == 1          # reset at the start of each __call__
    assert layer.losses[0] == pytest.approx(0.03)
    assert layer.activity_reg.losses[0] == pytest.approx(0.03)


class OuterLayerWithKernelRegularizer(layers.Layer):
    def __init__(self):
        super().__init__()
        self.dense = layers.Dense(32, kernel_regularizer=hiapi.regularizers.L2(1e-3))

    def call(self, inputs):
        return self.dense(inputs)


def test_losses_list_the_weight_regularization_penalties():
    layer = OuterLayerWithKernelRegularizer()
    _ = layer(np.zeros((1, 1), np.float32))
    (penalty,) = layer.losses
    assert penalty == pytest.approx(1e-3 * np.sum(layer.dense.kernel.numpy() ** 2), rel=1e-5)
    layer.trainable = False                # a frozen weight's penalty is no loss (Keras)
    assert layer.losses == []


def activity_model(rate=0.5):
    inputs = hiapi.Input((3,))
    hidden = layers.Dense(4, name="hidden")(inputs)
    penalised = ActivityRegularizationLayer(rate, name="activity")(hidden)
    return hiapi.Model(inputs, layers.Dense(1, name="out")(penalised))


def test_added_losses_count_in_the_training_and_evaluation_loss():
    model, unpenalised = activity_model(), activity_model(rate=0.0)
    unpenalised.set_weights(model.get_weights())
    for m in (model, unpenalised):
        m.compile(optimizer="sgd", loss="mse")
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(8, 3)).astype(np.float32), rng.normal(size=(8, 1))

    def hidden_mean(m):
        layer = m.get_layer("hidden")
        return np.mean(x @ layer.kernel.numpy() + layer.bias.numpy())
    mse = np.mean((model.predict(x, verbose=0) - y) ** 2)
    expected = mse + 0.5 * hidden_mean(model)
    assert model.evaluate(x, y, batch_size=8, verbose=0) == pytest.approx(expected, rel=1e-5)
    assert model.train_on_batch(x, y) == pytest.approx(expected, rel=1e-5)
    unpenalised.train_on_batch(x, y)
    # the penalty's gradient reached the hidden layer: one SGD step from the same weights
    # leaves mean(hidden) lower than the step without it
    assert hidden_mean(model) < hidden_mean(unpenalised) - 1e-4


def test_model_losses_after_a_call_on_arrays():
    model = activity_model(rate=1.0)
    x = np.ones((2, 3), np.float32)
    hidden = model.get_layer("hidden")(x)
    model(x)
    (loss,) = model.losses
    assert loss == pytest.approx(hidden.mean(), rel=1e-5)


def test_a_shared_layer_is_penalised_once():
    dense = layers.Dense(2, kernel_regularizer=hiapi.regularizers.L2(1.0), use_bias=False)
    inputs = hiapi.Input((2,))
    model = hiapi.Model(inputs, dense(dense(inputs)))
    model.compile(optimizer="sgd", loss="mse")
    x, y = np.ones((4, 2), np.float32), np.zeros((4, 2), np.float32)
    mse = np.mean((model.predict(x, verbose=0) - y) ** 2)
    penalty = np.sum(dense.kernel.numpy() ** 2)
    assert model.evaluate(x, y, verbose=0) == pytest.approx(mse + penalty, rel=1e-5)


class LogisticEndpoint(layers.Layer):
    """Keras's guide: a layer that computes its own loss from targets given as an input."""

    def __init__(self, name=None):
        super().__init__(name=name)
        self.loss_fn = hiapi.losses.BinaryCrossentropy(from_logits=True)

    def call(self, targets, logits, sample_weights=None):
        loss = self.loss_fn(targets, logits, sample_weights)
        self.add_loss(loss)
        return ops.softmax(logits)


def test_logistic_endpoint_compiles_without_a_loss_and_learns():
    hiapi.utils.set_random_seed(0)
    inputs = hiapi.Input(shape=(3,), name="inputs")
    targets = hiapi.Input(shape=(10,), name="targets")
    logits = layers.Dense(10)(inputs)
    predictions = LogisticEndpoint(name="predictions")(targets, logits)
    model = hiapi.Model(inputs=[inputs, targets], outputs=predictions)
    model.compile(optimizer=hiapi.optimizers.Adam(0.05))
    rng = np.random.default_rng(0)
    data = {"inputs": rng.random((64, 3)), "targets": (rng.random((64, 10)) > 0.5) * 1.0}
    history = model.fit(data, epochs=30, batch_size=16, verbose=0).history["loss"]
    assert history[-1] < history[0] - 0.02         # the bias learns each class's rate
    logits_now = data["inputs"] @ model.layers[2].kernel.numpy() + model.layers[2].bias.numpy()
    expected = np.mean(np.maximum(logits_now, 0) - logits_now * data["targets"] +
                       np.log1p(np.exp(-np.abs(logits_now))))
    assert model.evaluate(data, verbose=0) == pytest.approx(expected, rel=1e-4)


def test_compile_without_any_loss_fails_when_fit_has_nothing_to_minimise():
    model = hiapi.Sequential([hiapi.Input((2,)), layers.Dense(1)])
    model.compile(optimizer="sgd")
    with pytest.raises(ValueError, match="No loss to compute.*give compile\\(\\) a loss, or "
                                         "call self.add_loss"):
        model.fit(np.ones((4, 2)), np.ones((4, 1)), verbose=0)


def test_add_loss_needs_a_tensor_computed_in_call():
    layer = ActivityRegularizationLayer()
    with pytest.raises(ValueError, match="add_loss\\(\\) can only be called from inside call"):
        layer.add_loss(np.float32(1.0))
    inputs = hiapi.Input((2,))
    model = hiapi.Model(inputs, layer(inputs))
    assert layer.losses == []          # building the model recorded nothing, as in Keras
    with pytest.raises(ValueError, match="Layer 'model.*add_loss\\(\\) can only be called"):
        model.add_loss(ops.sum(model.outputs[0]))      # Keras 3 refuses it too


class SumLoss(layers.Layer):
    def call(self, x):
        self.add_loss(x * 0.5)            # not a scalar: summed, as Keras does
        return x


def test_a_non_scalar_loss_is_summed():
    layer = SumLoss()
    layer(np.arange(4, dtype=np.float32).reshape(2, 2))
    assert layer.losses[0] == pytest.approx(3.0)


def test_an_activity_regularizer_is_one_of_the_losses():
    layer = layers.Dense(2, kernel_initializer="ones",
                         activity_regularizer=hiapi.regularizers.L2(0.5))
    layer(np.ones((1, 3), np.float32))
    assert layer.losses == [pytest.approx(0.5 * 2 * 3.0 ** 2)]      # outputs are all 3
    inputs = hiapi.Input((3,))
    hiapi.Model(inputs, layer(inputs))       # building a model with it is no call: no losses
    assert layer.losses == []
