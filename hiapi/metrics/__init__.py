"""Metrics with Keras's names.

A metric adds to the compiled step a few *additive statistics* of each batch (for a mean: the sum
of per-sample values and their count) and keeps running totals on the host; ``result()`` turns
the totals into the value. Additive statistics make epoch results exact whatever the batch sizes,
and let a distributed run sum them across workers before ``result()``.
"""
import numpy as np

from hiapi.graph import ops


class Metric:
    n_statistics = 2     # how many Vars statistics() returns

    def __init__(self, name=None, dtype=None):
        self.name = name or _snake(type(self).__name__)
        self.dtype = dtype
        self.reset_state()

    def statistics(self, y_true, y_pred):
        """Vars whose per-batch values are summed into the running totals."""
        raise NotImplementedError

    def reset_state(self):
        self.totals = None

    def update_state(self, *batch_statistics):
        values = [np.asarray(v, dtype=np.float64) for v in batch_statistics]
        self.totals = values if self.totals is None else \
            [t + v for t, v in zip(self.totals, values)]

    def result(self):
        raise NotImplementedError

    def get_config(self):
        return {"name": self.name}


class Mean(Metric):
    """Weighted mean of values fed to ``update_state(total, count)`` (used for the loss)."""

    def result(self):
        if self.totals is None or self.totals[1] == 0:
            return 0.0
        return float(self.totals[0] / self.totals[1])


class MeanMetricWrapper(Mean):
    """Mean over samples of ``fn(y_true, y_pred)``, one value per sample."""

    def __init__(self, fn, name=None, dtype=None):
        self.fn = fn
        super().__init__(name=name or fn.__name__, dtype=dtype)

    def statistics(self, y_true, y_pred):
        values = ops.cast(self.fn(y_true, y_pred), "float64")
        return [ops.sum(values), ops.size(values, dtype="float64")]


def sparse_categorical_accuracy(y_true, y_pred):
    return ops.equal(ops.argmax(y_pred, -1), ops.cast(y_true, "int64"))


def categorical_accuracy(y_true, y_pred):
    return ops.equal(ops.argmax(y_pred, -1), ops.argmax(y_true, -1))


def binary_accuracy(y_true, y_pred, threshold=0.5):
    hits = ops.cast(ops.equal(y_pred > threshold, y_true > threshold), "float64")
    return ops.mean(hits, axis=-1)


def SparseCategoricalAccuracy(name="sparse_categorical_accuracy"):
    return MeanMetricWrapper(sparse_categorical_accuracy, name)


def CategoricalAccuracy(name="categorical_accuracy"):
    return MeanMetricWrapper(categorical_accuracy, name)


def BinaryAccuracy(name="binary_accuracy"):
    return MeanMetricWrapper(binary_accuracy, name)


def _snake(name):
    from hiapi.utils.naming import snake_case
    return snake_case(name)


def sparse_top_k_categorical_accuracy(y_true, y_pred, k=5):
    """1 where the true class's score is among the k highest (ties count as in), else 0."""
    true_score = ops.sum(y_pred * ops.one_hot(ops.cast(y_true, "int64"), y_pred.shape[-1],
                                              y_pred.dtype), axis=-1, keepdims=True)
    higher = ops.sum(ops.cast(y_pred > true_score, "float32"), axis=-1)
    return higher < k


def SparseTopKCategoricalAccuracy(k=5, name="sparse_top_k_categorical_accuracy"):
    return MeanMetricWrapper(lambda t, p: sparse_top_k_categorical_accuracy(t, p, k), name)


class _Confusion(Metric):
    """Counts of true/false positives/negatives at ``thresholds`` (binary or per-element)."""
    n_statistics = 4

    def __init__(self, thresholds, name=None):
        self.thresholds = [float(t) for t in thresholds]
        super().__init__(name=name)

    def statistics(self, y_true, y_pred):
        truth = ops.cast(y_true, "float32") > 0.5
        stats = [[], [], [], []]
        for threshold in self.thresholds:
            predicted = y_pred > threshold
            for i, (p, t) in enumerate(((True, True), (True, False), (False, True),
                                        (False, False))):
                hit = predicted if p else ops.equal(predicted, False)
                label = truth if t else ops.equal(truth, False)
                stats[i].append(ops.sum(ops.cast(ops.where(label, hit, False), "float64")))
        return [ops.concatenate([ops.expand_dims(v, 0) for v in s], 0) if len(s) > 1
                else s[0] for s in stats]


def _ratio(numerator, denominator):
    """numerator / denominator per threshold, 0 where nothing was counted."""
    value = np.where(denominator > 0, numerator / np.maximum(denominator, 1e-300), 0.0)
    return float(value) if np.ndim(value) == 0 else value.tolist()


class Precision(_Confusion):
    """TP / (TP + FP) at ``thresholds`` (default 0.5) over all batches seen."""

    def __init__(self, thresholds=None, name="precision"):
        super().__init__([0.5] if thresholds is None else np.atleast_1d(thresholds), name)

    def result(self):
        tp, fp = self.totals[0], self.totals[1]
        return _ratio(tp, tp + fp)


class Recall(_Confusion):
    """TP / (TP + FN) at ``thresholds`` (default 0.5) over all batches seen."""

    def __init__(self, thresholds=None, name="recall"):
        super().__init__([0.5] if thresholds is None else np.atleast_1d(thresholds), name)

    def result(self):
        tp, fn = self.totals[0], self.totals[2]
        return _ratio(tp, tp + fn)


class AUC(_Confusion):
    """Area under the ROC curve, from confusion counts at ``num_thresholds`` thresholds with the
    trapezoidal rule (Keras's default summation method)."""

    def __init__(self, num_thresholds=200, name="auc"):
        epsilon = 1e-7
        inner = [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)]
        super().__init__([-epsilon] + inner + [1.0 + epsilon], name)

    def result(self):
        tp, fp, fn, tn = self.totals
        tpr = tp / np.maximum(tp + fn, 1e-300)
        fpr = fp / np.maximum(fp + tn, 1e-300)
        return float(np.sum((fpr[:-1] - fpr[1:]) * (tpr[:-1] + tpr[1:]) / 2))


_BY_NAME = {f.__name__: f for f in (sparse_categorical_accuracy, categorical_accuracy,
                                    binary_accuracy, sparse_top_k_categorical_accuracy)}
_CLASSES = {"precision": Precision, "recall": Recall, "auc": AUC}


def get(identifier, y_true_shape=None, y_pred_shape=None):
    """A Metric from a name, a function or an instance.

    ``"accuracy"``/``"acc"`` resolve as in Keras from the shapes: binary when the predictions
    have one column, sparse categorical when the labels have one axis fewer than the
    predictions, categorical otherwise; the metric keeps the name the user gave.
    """
    if isinstance(identifier, Metric):
        return identifier
    if identifier in ("accuracy", "acc"):
        if y_pred_shape is not None and y_pred_shape[-1] == 1:
            fn = binary_accuracy
        elif y_true_shape is not None and len(y_true_shape) == len(y_pred_shape) - 1:
            fn = sparse_categorical_accuracy
        else:
            fn = categorical_accuracy
        return MeanMetricWrapper(fn, name=identifier)
    if isinstance(identifier, str) and identifier in _BY_NAME:
        return MeanMetricWrapper(_BY_NAME[identifier], name=identifier)
    if isinstance(identifier, str) and identifier.lower() in _CLASSES:
        return _CLASSES[identifier.lower()]()
    if callable(identifier):
        return MeanMetricWrapper(identifier)
    raise ValueError(f"Unknown metric {identifier!r}: expected 'accuracy' or one of "
                     f"{', '.join(sorted(_BY_NAME))}, a function(y_true, y_pred), or a "
                     f"hiapi.metrics.Metric")
