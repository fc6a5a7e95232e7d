"""Metrics: regression metrics against numpy over several batches, Keras's Metric subclass API
in compile/fit/evaluate, Mean/Sum/MeanMetricWrapper, names, and configs."""
import numpy as np
import pytest

import hiapi
from hiapi import metrics

RNG = np.random.default_rng(3)
EPS = 1e-7

REGRESSION = [
    ("mean_squared_error", metrics.MeanSquaredError, lambda t, p: ((p - t) ** 2).mean(-1)),
    ("mean_absolute_error", metrics.MeanAbsoluteError, lambda t, p: np.abs(p - t).mean(-1)),
    ("mean_absolute_percentage_error", metrics.MeanAbsolutePercentageError,
     lambda t, p: 100 * (np.abs(t - p) / np.maximum(np.abs(t), EPS)).mean(-1)),
    ("mean_squared_logarithmic_error", metrics.MeanSquaredLogarithmicError,
     lambda t, p: ((np.log1p(np.maximum(p, EPS)) - np.log1p(np.maximum(t, EPS))) ** 2).mean(-1)),
    ("cosine_similarity", metrics.CosineSimilarity,
     lambda t, p: (t * p).sum(-1) / np.linalg.norm(t, axis=-1) / np.linalg.norm(p, axis=-1)),
    ("logcosh", metrics.LogCoshError, lambda t, p: np.log(np.cosh(p - t)).mean(-1)),
]


def batches(sizes=(7, 16, 3), width=3):
    return [(RNG.uniform(0.5, 2.0, (n, width)), RNG.uniform(0.5, 2.0, (n, width)))
            for n in sizes]


@pytest.mark.parametrize("name, cls, per_sample", REGRESSION, ids=[r[0] for r in REGRESSION])
def test_regression_metric_is_the_mean_over_all_samples(name, cls, per_sample):
    """Running means are weighted by sample count: uneven batches give the overall mean."""
    data = batches()
    metric = cls()
    assert metric.name == name
    for t, p in data:
        metric.update_state(t, p)
    everything = np.concatenate([per_sample(t, p) for t, p in data])
    assert metric.result() == pytest.approx(everything.mean(), rel=1e-6)
    metric.reset_state()
    assert metric.result() == 0.0


def test_root_mean_squared_error_and_sample_weights():
    data = batches()
    rmse = metrics.RootMeanSquaredError()
    for t, p in data:
        rmse.update_state(t, p)
    squared = np.concatenate([((p - t) ** 2).ravel() for t, p in data])
    assert rmse.result() == pytest.approx(np.sqrt(squared.mean()))
    mae, total, weights = metrics.MeanAbsoluteError(), 0.0, 0.0
    for t, p in data:
        w = RNG.uniform(size=len(t))
        mae.update_state(t, p, sample_weight=w)
        total, weights = total + (np.abs(p - t).mean(-1) * w).sum(), weights + w.sum()
    assert mae.result() == pytest.approx(total / weights)


def test_mean_sum_and_wrapper():
    mean = metrics.Mean()
    mean.update_state([1.0, 3.0])
    mean.update_state([5.0], sample_weight=[2.0])
    assert mean.result() == pytest.approx((1 + 3 + 10) / 4)
    total = metrics.Sum()
    total.update_state([[1.0, 2.0], [3.0, 4.0]])        # per-sample means 1.5 and 3.5
    assert total.result() == pytest.approx(5.0)

    def within_half(y_true, y_pred):
        return hiapi.graph.ops.cast(hiapi.graph.ops.abs(y_true - y_pred) < 0.5, "float32")

    wrapper = metrics.MeanMetricWrapper(within_half)
    assert wrapper.name == "within_half"
    assert wrapper(np.array([0.0, 1.0, 2.0]), np.array([0.1, 0.2, 2.4])) == \
        pytest.approx(2 / 3)


@pytest.mark.parametrize("identifier, cls, name", [
    ("mse", metrics.MeanSquaredError, "mse"), ("mae", metrics.MeanAbsoluteError, "mae"),
    ("mape", metrics.MeanAbsolutePercentageError, "mape"),
    ("msle", metrics.MeanSquaredLogarithmicError, "msle"),
    ("mean_squared_error", metrics.MeanSquaredError, "mean_squared_error"),
    ("RootMeanSquaredError", metrics.RootMeanSquaredError, "root_mean_squared_error"),
    ("logcosh", metrics.LogCoshError, "logcosh"), ("auc", metrics.AUC, "auc"),
])
def test_string_names(identifier, cls, name):
    metric = metrics.get(identifier)
    assert type(metric) is cls and metric.name == name


def test_accuracy_resolution_follows_keras():
    assert isinstance(metrics.get("accuracy", (None,), (None, 1)), metrics.BinaryAccuracy)
    assert isinstance(metrics.get("acc", (None,), (None, 5)), metrics.SparseCategoricalAccuracy)
    assert isinstance(metrics.get("accuracy", (None, 1), (None, 5)),
                      metrics.SparseCategoricalAccuracy)
    assert isinstance(metrics.get("accuracy", (None, 5), (None, 5)),
                      metrics.CategoricalAccuracy)
    assert metrics.get("acc", (None,), (None, 5)).name == "acc"


def test_binary_accuracy_with_flat_labels_is_per_sample():
    """Labels (N,) with predictions (N, 1) were broadcast to (N, N) before."""
    metric = metrics.BinaryAccuracy()
    metric.update_state(np.array([1.0, 0.0, 1.0, 0.0]), np.array([[0.9], [0.2], [0.4], [0.7]]))
    assert metric.result() == pytest.approx(0.5)


@hiapi.saving.register_keras_serializable(package="tests")
class CategoricalTruePositives(metrics.Metric):
    """Keras's guide example, written with numpy."""

    def __init__(self, name="categorical_true_positives", **kwargs):
        super().__init__(name=name, **kwargs)
        self.true_positives = self.add_variable(shape=(), initializer="zeros", name="ctp")

    def update_state(self, y_true, y_pred, sample_weight=None):
        values = (np.argmax(y_pred, axis=1) == np.reshape(y_true, -1)).astype("float32")
        if sample_weight is not None:
            values = values * np.reshape(sample_weight, -1)
        self.true_positives.assign_add(np.sum(values))

    def result(self):
        return self.true_positives

    def reset_state(self):
        self.true_positives.assign(0.0)


def classifier():
    hiapi.utils.set_random_seed(0)
    model = hiapi.Sequential([hiapi.Input((4,)), hiapi.layers.Dense(3, activation="softmax")])
    model.compile(optimizer=hiapi.optimizers.SGD(0.1), loss="sparse_categorical_crossentropy",
                  metrics=[CategoricalTruePositives(), "accuracy"])
    return model


def test_custom_metric_subclass_in_fit_and_evaluate():
    x = RNG.normal(size=(50, 4)).astype(np.float32)
    y = RNG.integers(0, 3, 50)
    model = classifier()
    history = model.fit(x, y, batch_size=16, epochs=2, verbose=0, validation_split=0.2)
    assert set(history.history) >= {"categorical_true_positives", "val_categorical_true_positives"}
    counts = history.history["categorical_true_positives"]
    assert all(0 <= c <= 40 and float(c).is_integer() for c in counts)
    logs = model.evaluate(x, y, batch_size=7, verbose=0, return_dict=True)
    hits = (model.predict(x, verbose=0).argmax(-1) == y).sum()
    assert logs["categorical_true_positives"] == hits        # summed over uneven batches
    assert logs["accuracy"] == pytest.approx(hits / 50)


def test_metric_variables_api():
    metric = CategoricalTruePositives()
    assert [v.name for v in metric.variables] == ["ctp"]
    metric.update_state(np.array([0, 1]), np.array([[0.9, 0.1], [0.8, 0.2]]))
    assert float(metric.result()) == 1.0 and metric.result() + 1 == 2.0
    metric.reset_state()
    assert float(metric.result()) == 0.0
    with pytest.raises(ValueError, match="aggregation must be 'sum'"):
        metric.add_variable((), aggregation="mean", name="m")


def test_metric_objects_and_per_output_metrics_save_and_load(tmp_path):
    """ModelCheckpoint failed after the first epoch: 'cannot save metric ...: give metrics by
    name'. Objects, functions, per-output lists and dicts now save and load working."""
    def parity_error(y_true, y_pred):
        return hiapi.graph.ops.mean(hiapi.graph.ops.abs(y_true - y_pred), axis=-1)

    image = hiapi.Input((4,), name="image")
    hidden = hiapi.layers.Dense(8, activation="relu")(image)
    digit = hiapi.layers.Dense(3, activation="softmax", name="digit")(hidden)
    parity = hiapi.layers.Dense(1, activation="sigmoid", name="parity")(hidden)
    model = hiapi.Model(image, [digit, parity])
    model.compile(optimizer="adam",
                  loss={"digit": "sparse_categorical_crossentropy",
                        "parity": hiapi.losses.BinaryCrossentropy(label_smoothing=0.1)},
                  metrics={"digit": [metrics.SparseCategoricalAccuracy(name="acc"),
                                     CategoricalTruePositives()],
                           "parity": ["mae", metrics.AUC(num_thresholds=50), parity_error]})
    x = RNG.normal(size=(40, 4)).astype(np.float32)
    y = [RNG.integers(0, 3, 40), RNG.integers(0, 2, 40).astype(np.float32)]
    path = tmp_path / "best.hiapi"
    model.fit(x, y, epochs=2, batch_size=8, verbose=0, validation_split=0.25,
              callbacks=[hiapi.callbacks.ModelCheckpoint(path, save_best_only=True)])
    before = model.evaluate(x, y, verbose=0, return_dict=True)
    assert "digit_acc" in before and "parity_auc" in before and "parity_parity_error" in before
    loaded = hiapi.models.load_model(path, custom_objects={"parity_error": parity_error})
    model.save(tmp_path / "last.hiapi")
    loaded = hiapi.models.load_model(tmp_path / "last.hiapi",
                                     custom_objects={"parity_error": parity_error})
    after = loaded.evaluate(x, y, verbose=0, return_dict=True)
    assert after.keys() == before.keys()
    for key in before:
        assert after[key] == pytest.approx(before[key], rel=1e-6), key
    with pytest.raises(ValueError, match="Unknown function 'parity_error'.*custom_objects"):
        hiapi.models.load_model(tmp_path / "last.hiapi")


def test_a_lambda_metric_cannot_be_saved_and_says_why(tmp_path):
    model = hiapi.Sequential([hiapi.Input((2,)), hiapi.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse",
                  metrics=[lambda t, p: hiapi.graph.ops.mean(t - p, axis=-1)])
    model.fit(np.ones((4, 2), np.float32), np.ones(4, np.float32), verbose=0)
    with pytest.raises(ValueError, match="a lambda has no name to load it by"):
        model.save(tmp_path / "m.hiapi")


@pytest.mark.parametrize("metric", [
    metrics.BinaryAccuracy(threshold=0.3), metrics.SparseTopKCategoricalAccuracy(k=2),
    metrics.TopKCategoricalAccuracy(k=3, name="top3"), metrics.Precision(thresholds=[0.2, 0.7]),
    metrics.Recall(), metrics.AUC(num_thresholds=20, from_logits=True),
    metrics.CosineSimilarity(axis=-1), metrics.RootMeanSquaredError(name="rmse"),
    metrics.BinaryCrossentropy(from_logits=True), metrics.Mean(name="m"), metrics.Sum(),
    metrics.R2Score(class_aggregation=None, num_regressors=2)])
def test_metric_config_round_trip(metric):
    copy = metrics.deserialize(metrics.serialize(metric))
    assert type(copy) is type(metric) and copy.get_config() == metric.get_config()


@hiapi.saving.register_keras_serializable(package="tests")
class WeightTotal(metrics.Metric):
    """Sums the sample weights it is given (1 per sample without weights), on the host."""

    def __init__(self, name="weight_total", **kwargs):
        super().__init__(name=name, **kwargs)
        self.total = self.add_variable((), "zeros", name="total")

    def update_state(self, y_true, y_pred, sample_weight=None):
        self.total.assign_add(len(y_true) if sample_weight is None else np.sum(sample_weight))

    def result(self):
        return self.total


def test_weighted_metrics_get_sample_weights_and_save(tmp_path):
    """compile(weighted_metrics=...) was accepted and ignored; now those metrics are weighted
    by sample_weight (and class_weight), named weighted_<name> beside an unweighted twin."""
    x = RNG.normal(size=(30, 3)).astype(np.float32)
    y = RNG.normal(size=30).astype(np.float32)
    w = RNG.uniform(0.1, 2.0, 30).astype(np.float32)
    model = hiapi.Sequential([hiapi.Input((3,)), hiapi.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse", metrics=["mae"],
                  weighted_metrics=["mae", WeightTotal()])
    logs = model.evaluate(x, y, sample_weight=w, batch_size=8, verbose=0, return_dict=True)
    error = np.abs(model.predict(x, verbose=0)[:, 0] - y)
    assert list(logs) == ["loss", "mae", "weighted_mae", "weight_total"]
    assert logs["mae"] == pytest.approx(error.mean(), rel=1e-5)
    assert logs["weighted_mae"] == pytest.approx((error * w).sum() / w.sum(), rel=1e-5)
    assert logs["weight_total"] == pytest.approx(w.sum(), rel=1e-5)
    model.save(tmp_path / "m.hiapi")
    loaded = hiapi.models.load_model(tmp_path / "m.hiapi")
    again = loaded.evaluate(x, y, sample_weight=w, batch_size=8, verbose=0, return_dict=True)
    assert again == pytest.approx(logs)


def test_mean_metrics_skip_masked_steps():
    """As in Keras, a masked sequence output's padding steps do not count in mean metrics
    (Embedding(mask_zero=True) marks token 0 as padding)."""
    hiapi.utils.set_random_seed(2)
    model = hiapi.Sequential([
        hiapi.Input((5,), dtype="int64"),
        hiapi.layers.Embedding(6, 3, mask_zero=True),
        hiapi.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse", metrics=["mae"],
                  weighted_metrics=[metrics.MeanSquaredError(name="wmse")])
    tokens = np.array([[1, 2, 3, 0, 0], [4, 5, 0, 0, 0], [1, 1, 1, 1, 1]])
    y = RNG.normal(size=(3, 5, 1)).astype(np.float32)
    w = np.array([1.0, 2.0, 0.5], np.float32)
    logs = model.evaluate(tokens, y, sample_weight=w, verbose=0, return_dict=True)
    real = tokens > 0
    error = (model.predict(tokens, verbose=0) - y)[..., 0]
    assert logs["mae"] == pytest.approx(np.abs(error)[real].mean(), rel=1e-5)
    weights = real * w[:, None]
    assert logs["wmse"] == pytest.approx((error ** 2 * weights).sum() / weights.sum(), rel=1e-5)


def test_keras_guide_metric_with_hiapi_ops_sees_the_labels_as_given():
    """The guide's CategoricalTruePositives, written with hiapi.ops, with labels (N, 1): the
    sparse loss used to squeeze the labels before metrics saw them, so the guide's
    ``y_true == reshape(argmax(y_pred), (-1, 1))`` broadcast to (N, N)."""
    from hiapi import ops

    class GuideTruePositives(metrics.Metric):
        def __init__(self, name="categorical_true_positives", **kwargs):
            super().__init__(name=name, **kwargs)
            self.true_positives = self.add_variable(shape=(), name="ctp", initializer="zeros")

        def update_state(self, y_true, y_pred, sample_weight=None):
            y_pred = ops.reshape(ops.argmax(y_pred, axis=1), (-1, 1))
            values = ops.cast(ops.cast(y_true, "int32") == ops.cast(y_pred, "int32"), "float32")
            self.true_positives.assign_add(ops.sum(values))

        def result(self):
            return self.true_positives

    x = RNG.normal(size=(20, 4)).astype(np.float32)
    y = RNG.integers(0, 3, (20, 1))
    model = hiapi.Sequential([hiapi.Input((4,)), hiapi.layers.Dense(3, activation="softmax")])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                  metrics=[GuideTruePositives()])
    model.fit(x, y, epochs=1, batch_size=8, verbose=0)
    _, count = model.evaluate(x, y, batch_size=6, verbose=0)
    assert count == (model.predict(x, verbose=0).argmax(-1) == y[:, 0]).sum()


def np_r2(t, p, w=None):
    w = np.ones(len(t)) if w is None else w
    mean = (t * w[:, None]).sum(0) / w.sum()
    residual = (((t - p) ** 2) * w[:, None]).sum(0)
    total = (((t - mean) ** 2) * w[:, None]).sum(0)
    return 1 - residual / total, total


@pytest.mark.parametrize("aggregation", ["uniform_average", "variance_weighted_average", None])
def test_r2_score_over_batches(aggregation):
    t = RNG.normal(size=(40, 3)) * [1.0, 2.0, 0.5]
    p = t + RNG.normal(size=(40, 3)) * 0.3
    w = RNG.uniform(0.2, 1.0, 40)
    metric = metrics.R2Score(class_aggregation=aggregation)
    for part in (slice(0, 13), slice(13, 32), slice(32, 40)):
        metric.update_state(t[part], p[part], sample_weight=w[part])
    raw, variance = np_r2(t, p, w)
    expected = raw.mean() if aggregation == "uniform_average" else \
        (raw * variance).sum() / variance.sum() if aggregation else raw
    np.testing.assert_allclose(metric.result(), expected, rtol=1e-9)


def test_r2_score_adjusted_and_in_fit():
    t = RNG.normal(size=(30, 1))
    p = t + 0.5 * RNG.normal(size=(30, 1))
    metric = metrics.R2Score(num_regressors=3)
    metric.update_state(t, p)
    r2 = np_r2(t, p)[0][0]
    assert metric.result() == pytest.approx(1 - (1 - r2) * 29 / 26)
    x = RNG.normal(size=(30, 2)).astype(np.float32)
    model = hiapi.Sequential([hiapi.Input((2,)), hiapi.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse", metrics=["r2_score"])
    logs = model.evaluate(x, t[:, 0], batch_size=7, verbose=0, return_dict=True)
    assert logs["r2_score"] == pytest.approx(np_r2(t, model.predict(x, verbose=0))[0][0],
                                             rel=1e-5)
    with pytest.raises(ValueError, match="class_aggregation must be one of"):
        metrics.R2Score(class_aggregation="median")


@pytest.mark.parametrize("name", sorted(metrics._CLASSES))
def test_every_metric_class_round_trips_and_computes_the_same(name):
    cls = metrics._CLASSES[name]
    metric = cls()
    copy = metrics.deserialize(metrics.serialize(metric))
    assert type(copy) is cls and copy.get_config() == metric.get_config()
    t = np.eye(4)[RNG.integers(0, 4, 6)]
    p = RNG.uniform(0.05, 0.95, (6, 4))
    if name in ("Mean", "Sum"):
        metric.update_state(p), copy.update_state(p)
    elif name.startswith("Sparse"):
        metric.update_state(t.argmax(-1), p), copy.update_state(t.argmax(-1), p)
    else:
        metric.update_state(t, p), copy.update_state(t, p)
    np.testing.assert_allclose(copy.result(), metric.result())
    assert np.all(np.isfinite(metric.result()))


def np_fbeta(t, p, beta, average, threshold, w):
    predicted = (p >= p.max(-1, keepdims=True)) if threshold is None else (p > threshold)
    predicted, w = predicted.astype(float), w[:, None]
    axis = None if average == "micro" else 0
    tp = (predicted * t * w).sum(axis)
    fp = (predicted * (1 - t) * w).sum(axis)
    fn = ((1 - predicted) * t * w).sum(axis)
    precision, recall = tp / (tp + fp + 1e-7), tp / (tp + fn + 1e-7)
    score = (1 + beta ** 2) * precision * recall / (beta ** 2 * precision + recall + 1e-7)
    if average == "weighted":
        support = (t * w).sum(0)
        return (score * support / (support.sum() + 1e-7)).sum()
    return score.mean() if average else score


@pytest.mark.parametrize("average", [None, "micro", "macro", "weighted"])
@pytest.mark.parametrize("threshold", [None, 0.4])
def test_fbeta_score_over_weighted_batches(average, threshold):
    t = np.eye(3)[RNG.integers(0, 3, 50)]
    p = np.clip(t * 0.4 + RNG.uniform(size=(50, 3)) * 0.6, 0, 1)
    w = RNG.uniform(0.2, 1.0, 50)
    metric = metrics.FBetaScore(average=average, beta=2.0, threshold=threshold)
    for part in (slice(0, 17), slice(17, 50)):
        metric.update_state(t[part], p[part], sample_weight=w[part])
    np.testing.assert_allclose(metric.result(), np_fbeta(t, p, 2.0, average, threshold, w),
                               rtol=1e-9)
    f1 = metrics.get("f1_score")
    f1.update_state(t, p)
    np.testing.assert_allclose(f1.result(), np_fbeta(t, p, 1.0, None, None, np.ones(50)))
    with pytest.raises(ValueError, match="average must be one of"):
        metrics.F1Score(average="mean")


def test_precision_recall_top_k_and_class_id():
    t = np.eye(4)[RNG.integers(0, 4, 30)]
    p = RNG.uniform(size=(30, 4))
    top2 = np.argsort(-p, axis=1)[:, :2]
    in_top2 = np.zeros_like(p, bool)
    np.put_along_axis(in_top2, top2, True, axis=1)
    tp = (in_top2 & (t == 1)).sum()
    precision = metrics.Precision(top_k=2)
    recall = metrics.Recall(top_k=2)
    for part in (slice(0, 11), slice(11, 30)):
        precision.update_state(t[part], p[part])
        recall.update_state(t[part], p[part])
    assert precision.result() == pytest.approx(tp / in_top2.sum())
    assert recall.result() == pytest.approx(tp / t.sum())
    column = metrics.Precision(class_id=2, thresholds=0.6)
    column.update_state(t, p)
    predicted = p[:, 2] > 0.6
    assert column.result() == pytest.approx((predicted & (t[:, 2] == 1)).sum() / predicted.sum())
    copy = metrics.deserialize(metrics.serialize(metrics.Recall(top_k=3, class_id=1)))
    assert copy.top_k == 3 and copy.class_id == 1


def test_auc_pr_curve_and_summation_methods():
    truth = RNG.integers(0, 2, 400).astype(np.float32)
    scores = np.clip(truth * 0.35 + RNG.uniform(size=400) * 0.65, 0, 1).astype(np.float32)
    order = np.argsort(-scores)
    hits = truth[order]
    average_precision = np.sum(np.cumsum(hits) / np.arange(1, 401) * hits) / hits.sum()
    values = {}
    for method in ("interpolation", "minoring", "majoring"):
        metric = metrics.AUC(num_thresholds=1000, curve="PR", summation_method=method)
        for part in (slice(0, 150), slice(150, 400)):
            metric.update_state(truth[part], scores[part])
        values[method] = metric.result()
    assert values["minoring"] <= values["interpolation"] <= values["majoring"]
    assert values["interpolation"] == pytest.approx(average_precision, abs=0.01)
    separable = metrics.AUC(curve="PR")
    separable.update_state(np.array([0.0, 0.0, 1.0, 1.0]), np.array([0.1, 0.3, 0.7, 0.9]))
    assert separable.result() == pytest.approx(1.0, abs=1e-6)
    given = metrics.AUC(thresholds=[0.25, 0.5, 0.75])
    assert given.num_thresholds == 5
    assert metrics.deserialize(metrics.serialize(given)).get_config() == given.get_config()
    with pytest.raises(ValueError, match="curve must be 'ROC' or 'PR'"):
        metrics.AUC(curve="DET")


def test_weighted_confusion_counts():
    truth = RNG.integers(0, 2, (40, 2)).astype(np.float32)
    scores = RNG.uniform(size=(40, 2)).astype(np.float32)
    w = RNG.uniform(0.1, 2.0, 40)
    precision, recall = metrics.Precision(thresholds=[0.3, 0.6]), metrics.Recall()
    auc = metrics.AUC(num_thresholds=3)                 # thresholds -eps, 0.5, 1 + eps
    for m in (precision, recall, auc):
        m.update_state(truth, scores, sample_weight=w)
    ww = np.broadcast_to(w[:, None], truth.shape)
    for threshold, got in zip((0.3, 0.6), precision.result()):
        predicted = scores > threshold
        assert got == pytest.approx((ww * (predicted & (truth == 1))).sum() /
                                    (ww * predicted).sum())
    predicted = scores > 0.5
    tp, fn = (ww * (predicted & (truth == 1))).sum(), (ww * (~predicted & (truth == 1))).sum()
    fp, tn = (ww * (predicted & (truth == 0))).sum(), (ww * (~predicted & (truth == 0))).sum()
    assert recall.result() == pytest.approx(tp / (tp + fn))
    tpr, fpr = tp / (tp + fn), fp / (fp + tn)          # trapezoids through (1,1), (fpr,tpr), (0,0)
    assert auc.result() == pytest.approx((1 - fpr) * (1 + tpr) / 2 + fpr * tpr / 2)
