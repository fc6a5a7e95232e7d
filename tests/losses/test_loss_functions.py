"""Loss functions and classes against their formulas in numpy, on arrays (eager) and inside
compiled models (symbolic), and Keras's shape leniency between labels and predictions."""
import numpy as np
import pytest

import hiapi
from hiapi import losses
from hiapi.graph import Function, ops, placeholder

RNG = np.random.default_rng(11)
EPS = 1e-7


def softmax(z):
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def np_log_cosh(t, p):
    return np.log(np.cosh(p - t)).mean(-1)


def np_hinge(t, p):
    t = 2 * t - 1 if np.all((t == 0) | (t == 1)) else t
    return np.maximum(1 - t * p, 0).mean(-1)


# name, function, numpy formula per sample, label maker
REGRESSION = [
    ("mean_squared_error", losses.mean_squared_error, lambda t, p: ((p - t) ** 2).mean(-1)),
    ("mean_absolute_error", losses.mean_absolute_error, lambda t, p: np.abs(p - t).mean(-1)),
    ("mean_absolute_percentage_error", losses.mean_absolute_percentage_error,
     lambda t, p: 100 * (np.abs(t - p) / np.maximum(np.abs(t), EPS)).mean(-1)),
    ("mean_squared_logarithmic_error", losses.mean_squared_logarithmic_error,
     lambda t, p: ((np.log(np.maximum(p, EPS) + 1) - np.log(np.maximum(t, EPS) + 1)) ** 2
                   ).mean(-1)),
    ("huber", lambda t, p: losses.huber(t, p, delta=0.7),
     lambda t, p: np.where(np.abs(p - t) <= 0.7, 0.5 * (p - t) ** 2,
                           0.7 * np.abs(p - t) - 0.5 * 0.7 ** 2).mean(-1)),
    ("log_cosh", losses.log_cosh, np_log_cosh),
    ("hinge", losses.hinge, np_hinge),
    ("squared_hinge", losses.squared_hinge,
     lambda t, p: (np.maximum(1 - (2 * t - 1) * p, 0) ** 2).mean(-1)),
    ("poisson", losses.poisson, lambda t, p: (p - t * np.log(p + EPS)).mean(-1)),
    ("cosine_similarity", losses.cosine_similarity,
     lambda t, p: -(t * p).sum(-1) / np.linalg.norm(t, axis=-1) / np.linalg.norm(p, axis=-1)),
]


@pytest.mark.parametrize("name, fn, formula", REGRESSION, ids=[r[0] for r in REGRESSION])
def test_function_on_arrays_matches_numpy(name, fn, formula):
    t = RNG.integers(0, 2, (5, 3)).astype(np.float64) if "hinge" in name else \
        RNG.uniform(0.1, 2.0, (5, 3))
    p = RNG.uniform(0.1, 2.0, (5, 3))
    got = fn(t, p)
    assert isinstance(got, np.ndarray) and got.shape == (5,)
    np.testing.assert_allclose(got, formula(t, p), rtol=1e-6)


def test_probabilistic_functions_on_arrays():
    logits = RNG.normal(size=(6, 4))
    probs = softmax(logits)
    onehot = np.eye(4)[RNG.integers(0, 4, 6)]
    labels = onehot.argmax(-1)
    expected = -(onehot * np.log(probs)).sum(-1)
    np.testing.assert_allclose(losses.categorical_crossentropy(onehot, probs), expected,
                               rtol=1e-6)
    np.testing.assert_allclose(losses.categorical_crossentropy(onehot, logits, from_logits=True),
                               expected, rtol=1e-9)
    np.testing.assert_allclose(losses.sparse_categorical_crossentropy(labels, probs), expected,
                               rtol=1e-6)
    np.testing.assert_allclose(losses.sparse_categorical_crossentropy(labels[:, None], logits,
                                                                      from_logits=True),
                               expected, rtol=1e-9)
    smooth = onehot * 0.9 + 0.1 / 4
    np.testing.assert_allclose(
        losses.categorical_crossentropy(onehot, logits, from_logits=True, label_smoothing=0.1),
        -(smooth * np.log(probs)).sum(-1), rtol=1e-9)
    # axis=1 of a (batch, classes, steps) tensor is the same as the last axis transposed
    seq = RNG.normal(size=(2, 4, 3))
    seq_labels = np.eye(4)[RNG.integers(0, 4, (2, 3))]
    np.testing.assert_allclose(
        losses.categorical_crossentropy(seq_labels.transpose(0, 2, 1), seq, from_logits=True,
                                        axis=1),
        losses.categorical_crossentropy(seq_labels, seq.transpose(0, 2, 1), from_logits=True),
        rtol=1e-9)
    binary, z = RNG.integers(0, 2, (5, 2)).astype(float), RNG.normal(size=(5, 2)) * 3
    s = 1 / (1 + np.exp(-z))
    np.testing.assert_allclose(
        losses.binary_crossentropy(binary, z, from_logits=True),
        -(binary * np.log(s) + (1 - binary) * np.log(1 - s)).mean(-1), rtol=1e-9)
    t, q = softmax(RNG.normal(size=(3, 4))), softmax(RNG.normal(size=(3, 4)))
    np.testing.assert_allclose(losses.kl_divergence(t, q), (t * np.log(t / q)).sum(-1),
                               rtol=1e-6)


def test_sparse_crossentropy_ignore_class():
    logits = RNG.normal(size=(4, 3))
    labels = np.array([0, 2, 1, 2])
    full = losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)
    ignored = losses.sparse_categorical_crossentropy(labels, logits, from_logits=True,
                                                     ignore_class=2)
    np.testing.assert_allclose(ignored, np.where(labels == 2, 0.0, full), rtol=1e-9)


def test_aliases_are_the_functions():
    assert losses.mse is losses.MSE is losses.mean_squared_error
    assert losses.mae is losses.MAE is losses.mean_absolute_error
    assert losses.mape is losses.mean_absolute_percentage_error
    assert losses.msle is losses.mean_squared_logarithmic_error
    assert losses.kld is losses.kl_divergence and losses.logcosh is losses.log_cosh


def test_function_on_symbolic_tensors_builds_ops():
    t, p = placeholder((None, 3), "float64"), placeholder((None, 3), "float64")
    value = losses.huber(t, p, delta=0.5)
    assert isinstance(value, hiapi.graph.Var) and value.shape == (None,)
    a, b = RNG.normal(size=(4, 3)), RNG.normal(size=(4, 3))
    np.testing.assert_allclose(Function([t, p], value)(a, b), losses.huber(a, b, delta=0.5))


# ---- shape leniency ------------------------------------------------------------------------
ALL_FUNCTIONS = [fn for _, fn, _ in REGRESSION] + [
    losses.binary_crossentropy, losses.kl_divergence, hiapi.metrics.binary_accuracy,
    hiapi.metrics.accuracy, hiapi.metrics.functions.cosine_similarity]


@pytest.mark.parametrize("fn", ALL_FUNCTIONS)
def test_labels_without_the_trailing_axis_are_aligned(fn):
    """Keras's squeeze_or_expand_to_same_rank: labels (N,) with predictions (N, 1) give the
    same values as labels (N, 1); predictions (N,) with labels (N, 1) too."""
    t = RNG.integers(0, 2, 6).astype(np.float64)
    p = RNG.uniform(0.1, 0.9, (6, 1))
    np.testing.assert_allclose(fn(t, p), fn(t[:, None], p))
    np.testing.assert_allclose(fn(t[:, None], p[:, 0]), fn(t[:, None], p))


def test_mse_with_flat_labels_in_fit():
    """The issue: Dense(1) with labels of shape (N,) raised 'labels of shape (None,) must have
    the shape of the predictions (None, 1)'."""
    x = RNG.normal(size=(64, 3)).astype(np.float32)
    y = x @ np.array([1.0, -2.0, 0.5], np.float32)
    model = hiapi.Sequential([hiapi.Input((3,)), hiapi.layers.Dense(1)])
    model.compile(optimizer=hiapi.optimizers.SGD(0.1), loss="mean_squared_error",
                  metrics=["mae", "mape", hiapi.metrics.RootMeanSquaredError()])
    history = model.fit(x, y, epochs=30, batch_size=16, verbose=0)
    assert history.history["loss"][-1] < 0.01 * history.history["loss"][0]
    loss, mae, mape, rmse = model.evaluate(x, y, verbose=0)
    error = model.predict(x, verbose=0)[:, 0] - y
    assert loss == pytest.approx(np.mean(error ** 2), rel=1e-4)
    assert mae == pytest.approx(np.mean(np.abs(error)), rel=1e-4)
    assert rmse == pytest.approx(np.sqrt(np.mean(error ** 2)), rel=1e-4)


@pytest.mark.parametrize("loss", ["mse", "mae", "huber", "binary_crossentropy",
                                  losses.KLDivergence(), "categorical_crossentropy"])
def test_incompatible_labels_name_the_loss_and_shapes(loss):
    model = hiapi.Sequential([hiapi.Input((3,)), hiapi.layers.Dense(2, activation="softmax")])
    model.compile(optimizer="sgd", loss=loss)
    with pytest.raises(ValueError, match=r"labels of shape \(None, 3\).*predictions.*"
                                         r"\(None, 2\)"):
        model.fit(np.ones((4, 3), np.float32), np.ones((4, 3), np.float32), verbose=0)


def test_elementwise_losses_broadcast_labels_as_keras_does():
    """Keras's guide fits Dense(1) to labels of shape (8, 10): the squared error broadcasts,
    the cross-entropies still need equal shapes."""
    t, p = RNG.uniform(size=(8, 10)), RNG.uniform(0.1, 0.9, (8, 1))
    np.testing.assert_allclose(losses.mean_squared_error(t, p), ((t - p) ** 2).mean(-1),
                               rtol=1e-6)
    model = hiapi.Sequential([hiapi.Input((10,)), hiapi.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mean_squared_error")
    x = RNG.normal(size=(8, 10)).astype(np.float32)
    model.fit(x, t, verbose=0)
    want = ((t - model.predict(x, verbose=0)) ** 2).mean()
    assert model.evaluate(x, t, verbose=0) == pytest.approx(want, rel=1e-5)
    with pytest.raises(ValueError, match=r"binary_crossentropy: .*must have the same shape"):
        losses.binary_crossentropy(t, p)
    model.compile(optimizer="sgd", loss="binary_crossentropy")
    with pytest.raises(ValueError, match=r"labels of shape \(None, 10\) do not fit"):
        model.fit(x, t, verbose=0)


def test_incompatible_arrays_name_the_function():
    with pytest.raises(ValueError, match=r"mean_squared_error: labels of shape \(4, 3\) do not "
                                         r"fit predictions of shape \(4, 2\)"):
        losses.mean_squared_error(np.ones((4, 3)), np.ones((4, 2)))


# ---- loss objects --------------------------------------------------------------------------
def test_loss_objects_reduce_on_arrays():
    t, p = RNG.normal(size=(5, 2)), RNG.normal(size=(5, 2))
    w = RNG.uniform(size=5)
    per_sample = ((p - t) ** 2).mean(-1)
    assert losses.MeanSquaredError()(t, p) == pytest.approx(per_sample.mean())
    assert losses.MeanSquaredError(reduction="sum")(t, p) == pytest.approx(per_sample.sum())
    np.testing.assert_allclose(losses.MeanSquaredError(reduction="none")(t, p), per_sample)
    assert losses.MeanSquaredError()(t, p, sample_weight=w) == \
        pytest.approx((per_sample * w).mean())
    assert losses.MeanSquaredError(reduction="mean_with_sample_weight")(t, p, w) == \
        pytest.approx((per_sample * w).sum() / w.sum())
    assert losses.Huber(delta=0.5)(t, p) == pytest.approx(losses.huber(t, p, 0.5).mean())


@pytest.mark.parametrize("cls", [losses.MeanSquaredError, losses.MeanAbsoluteError,
                                 losses.MeanAbsolutePercentageError,
                                 losses.MeanSquaredLogarithmicError, losses.Huber,
                                 losses.LogCosh, losses.Hinge, losses.SquaredHinge,
                                 losses.CategoricalHinge, losses.KLDivergence, losses.Poisson,
                                 losses.CosineSimilarity, losses.BinaryCrossentropy,
                                 losses.CategoricalCrossentropy,
                                 losses.SparseCategoricalCrossentropy])
def test_loss_config_round_trip(cls):
    loss = cls(name="custom_name", reduction="sum")
    copy = losses.deserialize(losses.serialize(loss))
    assert type(copy) is cls and copy.get_config() == loss.get_config()
    assert copy.name == "custom_name" and copy.reduction == "sum"


def test_string_names_and_keras_default_names():
    assert losses.get("mse").name == "mean_squared_error"
    assert losses.get("MeanAbsoluteError").name == "mean_absolute_error"
    assert losses.Huber().name == "huber_loss"
    assert isinstance(losses.get("logcosh"), losses.LogCosh)
    with pytest.raises(ValueError, match="Unknown loss 'nope'"):
        losses.get("nope")
    with pytest.raises(ValueError, match="reduction must be one of"):
        losses.MeanSquaredError(reduction="avg")


def test_custom_loss_functions_use_the_library_functions():
    """A custom ``def my_loss(y_true, y_pred)`` passed to compile may call hiapi's loss
    functions on its symbolic arguments (per-sample values), as Keras scripts do."""
    def my_loss(y_true, y_pred):
        return losses.mean_squared_error(y_true, y_pred) + \
            0.5 * losses.mean_absolute_error(y_true, y_pred)

    x = RNG.normal(size=(32, 2)).astype(np.float32)
    y = (x.sum(-1, keepdims=True) > 0).astype(np.float32)
    model = hiapi.Sequential([hiapi.Input((2,)), hiapi.layers.Dense(1)])
    model.compile(optimizer="sgd", loss=my_loss)
    loss = model.evaluate(x, y[:, 0], verbose=0)
    error = model.predict(x, verbose=0) - y
    assert loss == pytest.approx(np.mean(error ** 2) + 0.5 * np.mean(np.abs(error)), rel=1e-5)


def test_loss_subclass_as_in_keras():
    class ScaledMSE(losses.Loss):
        def call(self, y_true, y_pred):
            return ops.mean(ops.square(y_pred - y_true), axis=-1) * 2.0

    t, p = RNG.normal(size=(3, 2)), RNG.normal(size=(3, 2))
    assert ScaledMSE()(t, p) == pytest.approx(2 * ((p - t) ** 2).mean())
    assert ScaledMSE().name == "scaled_mse"


def scaled_mae(y_true, y_pred):
    return 3.0 * losses.mean_absolute_error(y_true, y_pred)


@hiapi.saving.register_keras_serializable(package="tests")
class FocusedMSE(losses.Loss):
    def __init__(self, power=2.0, **kwargs):
        super().__init__(**kwargs)
        self.power = power

    def call(self, y_true, y_pred):
        return ops.mean(ops.power(ops.abs(y_pred - y_true), self.power), axis=-1)

    def get_config(self):
        return {**super().get_config(), "power": self.power}


@pytest.mark.parametrize("loss, custom_objects", [
    (scaled_mae, {"scaled_mae": scaled_mae}), (FocusedMSE(power=3.0), None),
    (losses.Huber(delta=0.25, reduction="sum"), None), ("msle", None)])
def test_compiled_losses_save_and_load(tmp_path, loss, custom_objects):
    x = RNG.uniform(size=(12, 2)).astype(np.float32)
    y = RNG.uniform(size=(12, 1)).astype(np.float32)
    model = hiapi.Sequential([hiapi.Input((2,)), hiapi.layers.Dense(1)])
    model.compile(optimizer="sgd", loss=loss)
    model.fit(x, y, epochs=1, verbose=0)
    model.save(tmp_path / "m.hiapi")
    loaded = hiapi.models.load_model(tmp_path / "m.hiapi", custom_objects=custom_objects)
    assert loaded.evaluate(x, y, verbose=0) == pytest.approx(model.evaluate(x, y, verbose=0))
    if custom_objects:
        with pytest.raises(ValueError, match="Unknown function 'scaled_mae'"):
            hiapi.models.load_model(tmp_path / "m.hiapi")


def test_focal_crossentropies():
    # Keras's documented example: [[0, 1], [0, 0]] against [[0.6, 0.4], [0.4, 0.6]], gamma=2
    got = losses.binary_focal_crossentropy(np.array([[0.0, 1.0], [0.0, 0.0]]),
                                           np.array([[0.6, 0.4], [0.4, 0.6]]), gamma=2.0)
    np.testing.assert_allclose(got, [0.330, 0.206], atol=5e-4)
    t = RNG.integers(0, 2, (4, 3)).astype(float)
    z = RNG.normal(size=(4, 3))
    p = 1 / (1 + np.exp(-z))
    p_t = t * p + (1 - t) * (1 - p)
    bce = -(t * np.log(p) + (1 - t) * np.log(1 - p))
    balance = t * 0.3 + (1 - t) * 0.7
    np.testing.assert_allclose(
        losses.binary_focal_crossentropy(t, z, apply_class_balancing=True, alpha=0.3, gamma=1.5,
                                         from_logits=True),
        (balance * (1 - p_t) ** 1.5 * bce).mean(-1), rtol=1e-6)
    onehot = np.eye(3)[RNG.integers(0, 3, 4)]
    q = softmax(z)
    np.testing.assert_allclose(
        losses.categorical_focal_crossentropy(onehot, z, from_logits=True),
        (0.25 * (1 - q) ** 2 * -onehot * np.log(q)).sum(-1), rtol=1e-6)
    loss = losses.get("binary_focal_crossentropy")
    assert isinstance(loss, losses.BinaryFocalCrossentropy)
    copy = losses.deserialize(losses.serialize(losses.CategoricalFocalCrossentropy(gamma=3.0)))
    assert copy.get_config()["gamma"] == 3.0


def test_loss_dtype_is_the_dtype_it_is_computed_in():
    t, p = placeholder((None, 1), "float32"), placeholder((None, 1), "float32")
    assert losses.MeanSquaredError(dtype="float64")(t, p).dtype == np.float64
    assert losses.MeanSquaredError()(t, p).dtype == np.float32
    model = hiapi.Sequential([hiapi.Input((2,)), hiapi.layers.Dense(1)])
    model.compile(optimizer="sgd", loss=losses.MeanSquaredError(dtype="float64"))
    history = model.fit(np.ones((8, 2), np.float32), np.zeros(8, np.float32), epochs=3,
                        verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]


@pytest.mark.parametrize("name", sorted(set(losses._CLASSES) - {"LossFunctionWrapper"}))
def test_every_loss_class_round_trips_and_computes_the_same(name):
    cls = losses._CLASSES[name]
    loss = cls()
    copy = losses.deserialize(losses.serialize(loss))
    assert type(copy) is cls and copy.get_config() == loss.get_config()
    t = np.eye(4)[RNG.integers(0, 4, 6)]
    p = RNG.uniform(0.05, 0.95, (6, 4))
    if name.startswith("Sparse"):
        t = t.argmax(-1)
    value = loss(t, p)
    assert np.isfinite(value) and copy(t, p) == pytest.approx(value)
