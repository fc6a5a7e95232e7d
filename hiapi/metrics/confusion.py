"""Precision, Recall and AUC from confusion counts (true/false positives/negatives) at a set of
thresholds, counted inside the compiled step and summed over batches (and workers)."""
import numpy as np

from hiapi.graph import ops
from hiapi.losses.shapes import squeeze_or_expand_to_same_rank
from hiapi.metrics.metric import Metric, graph_update

_COUNTS = ("true_positives", "false_positives", "false_negatives", "true_negatives")
NEG_INF = -1e10     # Keras's stand-in for -inf in confusion metrics


class _Confusion(Metric):
    """Counts of true/false positives/negatives at ``thresholds`` (binary or per-element)."""

    def __init__(self, thresholds, name=None, dtype=None, top_k=None, class_id=None):
        super().__init__(name=name, dtype=dtype)
        if top_k is not None and (not isinstance(top_k, int) or top_k < 1):
            raise ValueError(f"{type(self).__name__}: top_k must be a positive integer, got "
                             f"{top_k!r}")
        self.thresholds = [float(t) for t in thresholds]
        self.top_k, self.class_id = top_k, class_id
        for count in _COUNTS:
            setattr(self, count, self.add_variable((len(self.thresholds),), "zeros",
                                                   dtype="float64", name=count))

    def _scores(self, y_pred):
        return y_pred

    def _select(self, y_true, y_pred):
        """Keras's ``top_k`` (scores outside each row's k largest count as negative) and
        ``class_id`` (one column only)."""
        if self.top_k is not None:
            higher = ops.sum(ops.cast(ops.expand_dims(y_pred, -2) > ops.expand_dims(y_pred, -1),
                                      "float32"), axis=-1)
            y_pred = ops.where(higher < self.top_k, y_pred, NEG_INF)
        if self.class_id is not None:
            column = int(self.class_id)
            y_true = ops.slice_axis(y_true, -1, column, column + 1)
            y_pred = ops.slice_axis(y_pred, -1, column, column + 1)
        return y_true, y_pred

    def statistics(self, y_true, y_pred, sample_weight=None):
        y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
        y_true, y_pred = self._select(y_true, y_pred)
        truth = ops.cast(y_true, "float32") > 0.5
        y_pred = self._scores(y_pred)
        weight = None if sample_weight is None else ops.cast(sample_weight, "float64")
        while weight is not None and weight.ndim < y_pred.ndim:
            weight = ops.expand_dims(weight, -1)
        stats = [[], [], [], []]
        for threshold in self.thresholds:
            predicted = y_pred > threshold
            for i, (p, t) in enumerate(((True, True), (True, False), (False, True),
                                        (False, False))):
                hit = predicted if p else ops.equal(predicted, False)
                label = truth if t else ops.equal(truth, False)
                counted = ops.cast(ops.where(label, hit, False), "float64")
                stats[i].append(ops.sum(counted if weight is None else counted * weight))
        return [ops.concatenate([ops.expand_dims(v, 0) for v in s], 0) if len(s) > 1 else
                ops.expand_dims(s[0], 0) for s in stats]

    def merge_statistics(self, values):
        for count, value in zip(_COUNTS, values):
            getattr(self, count).assign_add(value)

    @graph_update
    def update_state(self, y_true, y_pred, sample_weight=None):
        self._update_from_statistics(y_true, y_pred, sample_weight)

    def get_config(self):
        return {**super().get_config(), "thresholds": self.thresholds, "top_k": self.top_k,
                "class_id": self.class_id}


def _ratio(numerator, denominator):
    """numerator / denominator per threshold, 0 where nothing was counted."""
    value = np.where(denominator > 0, numerator / np.maximum(denominator, 1e-300), 0.0)
    return float(value[0]) if value.size == 1 else value.tolist()


def _thresholds(thresholds, top_k):
    """Keras's default: 0.5, or "every top-k score is positive" with ``top_k``."""
    if thresholds is None:
        return [0.5 if top_k is None else NEG_INF]
    return np.atleast_1d(thresholds).tolist()


class Precision(_Confusion):
    """TP / (TP + FP) at ``thresholds`` (default 0.5) over all batches seen."""

    def __init__(self, thresholds=None, top_k=None, class_id=None, name="precision",
                 dtype=None):
        super().__init__(_thresholds(thresholds, top_k), name, dtype, top_k, class_id)

    def result(self):
        tp, fp = self.true_positives.value, self.false_positives.value
        return _ratio(tp, tp + fp)


class Recall(_Confusion):
    """TP / (TP + FN) at ``thresholds`` (default 0.5) over all batches seen."""

    def __init__(self, thresholds=None, top_k=None, class_id=None, name="recall",
                 dtype=None):
        super().__init__(_thresholds(thresholds, top_k), name, dtype, top_k, class_id)

    def result(self):
        tp, fn = self.true_positives.value, self.false_negatives.value
        return _ratio(tp, tp + fn)


class AUC(_Confusion):
    """Area under the ROC curve, from confusion counts at ``num_thresholds`` thresholds with the
    trapezoidal rule (Keras's default summation for ROC); ``from_logits`` applies a sigmoid
    to the predictions first."""

    def __init__(self, num_thresholds=200, name="auc", dtype=None, from_logits=False):
        if num_thresholds < 2:
            raise ValueError(f"AUC: num_thresholds must be > 1, got {num_thresholds!r}")
        self.num_thresholds, self.from_logits = int(num_thresholds), bool(from_logits)
        epsilon = 1e-7
        inner = [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)]
        super().__init__([-epsilon] + inner + [1.0 + epsilon], name, dtype)

    def _scores(self, y_pred):
        return ops.sigmoid(y_pred) if self.from_logits else y_pred

    def result(self):
        tp, fp, fn, tn = (getattr(self, c).value for c in _COUNTS)
        tpr = tp / np.maximum(tp + fn, 1e-300)
        fpr = fp / np.maximum(fp + tn, 1e-300)
        return float(np.sum((fpr[:-1] - fpr[1:]) * (tpr[:-1] + tpr[1:]) / 2))

    def get_config(self):
        config = Metric.get_config(self)
        return {**config, "num_thresholds": self.num_thresholds,
                "from_logits": self.from_logits}
