"""Precision, Recall and AUC from confusion counts (true/false positives/negatives) at a set of
thresholds, counted inside the compiled step and summed over batches (and workers)."""
from __future__ import annotations

from typing import Literal, Sequence

import numpy as np

from hiapi.hints import DTypeLike
from hiapi.graph import ops
from hiapi.losses.shapes import squeeze_or_expand_to_same_rank
from hiapi.metrics.metric import Metric, StatisticsMetric

_COUNTS = ("true_positives", "false_positives", "false_negatives", "true_negatives")
NEG_INF = -1e10     # Keras's stand-in for -inf in confusion metrics


class _Confusion(StatisticsMetric):
    """Counts of true/false positives/negatives at ``thresholds`` (binary or per-element)."""

    def __init__(self, thresholds: Sequence[float], name: str | None = None,
                 dtype: DTypeLike | None = None, top_k: int | None = None,
                 class_id: int | None = None) -> None:
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
        """TP, FP, FN, TN per threshold: every threshold at once, on a trailing axis."""
        y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
        y_true, y_pred = self._select(y_true, y_pred)
        scores = self._scores(y_pred)
        thresholds = ops.constant(np.array(self.thresholds, scores.dtype))
        predicted = ops.cast(ops.expand_dims(scores, -1) > thresholds, "float64")
        truth = ops.expand_dims(ops.cast(ops.cast(y_true, "float32") > 0.5, "float64"), -1)
        weight = ops.broadcast_like(ops.constant(np.float64(1.0)), truth)   # (..., 1)
        if sample_weight is not None:
            sample = ops.cast(sample_weight, "float64")
            while sample.ndim < truth.ndim:
                sample = ops.expand_dims(sample, -1)
            weight = weight * sample
        predicted = predicted * weight
        axes = tuple(range(predicted.ndim - 1))
        over_thresholds = lambda v: ops.sum(ops.broadcast_like(v, predicted), axis=axes)
        tp = ops.sum(predicted * truth, axis=axes)
        positives = ops.sum(predicted, axis=axes)                # TP + FP
        labelled = over_thresholds(truth * weight)               # TP + FN
        total = over_thresholds(weight)
        return [tp, positives - tp, labelled - tp, total - positives - labelled + tp]

    def _statistic_variables(self):
        return [getattr(self, count) for count in _COUNTS]

    def get_config(self):
        return {**super().get_config(), "thresholds": self.thresholds, "top_k": self.top_k,
                "class_id": self.class_id}


def _ratio(numerator, denominator):
    """numerator / denominator per threshold, 0 where nothing was counted."""
    value = _divide(numerator, denominator)
    return float(value[0]) if value.size == 1 else value.tolist()


def _thresholds(thresholds, top_k):
    """Keras's default: 0.5, or "every top-k score is positive" with ``top_k``."""
    if thresholds is None:
        return [0.5 if top_k is None else NEG_INF]
    return np.atleast_1d(thresholds).tolist()


class Precision(_Confusion):
    """TP / (TP + FP) at ``thresholds`` (default 0.5) over all batches seen."""

    def __init__(self, thresholds: float | Sequence[float] | None = None, top_k: int | None = None,
                 class_id: int | None = None, name: str | None = "precision",
                 dtype: DTypeLike | None = None) -> None:
        super().__init__(_thresholds(thresholds, top_k), name, dtype, top_k, class_id)

    def result(self):
        tp, fp = self.true_positives.value, self.false_positives.value
        return _ratio(tp, tp + fp)


class Recall(_Confusion):
    """TP / (TP + FN) at ``thresholds`` (default 0.5) over all batches seen."""

    def __init__(self, thresholds: float | Sequence[float] | None = None, top_k: int | None = None,
                 class_id: int | None = None, name: str | None = "recall",
                 dtype: DTypeLike | None = None) -> None:
        super().__init__(_thresholds(thresholds, top_k), name, dtype, top_k, class_id)

    def result(self):
        tp, fn = self.true_positives.value, self.false_negatives.value
        return _ratio(tp, tp + fn)


class AUC(_Confusion):
    """Area under the ROC (``curve="ROC"``) or precision-recall (``"PR"``) curve, from
    confusion counts at ``num_thresholds`` evenly spaced thresholds (or the given
    ``thresholds``), summed as Keras does: ``"interpolation"`` (trapezoids for ROC, Davis &
    Goadrich 2006 interpolation for PR), ``"minoring"`` or ``"majoring"``. ``from_logits``
    applies a sigmoid to the predictions first."""

    def __init__(self, num_thresholds: int = 200, curve: Literal["ROC", "PR"] = "ROC",
                 summation_method: Literal["interpolation", "minoring",
                                           "majoring"] = "interpolation",
                 name: str | None = "auc", dtype: DTypeLike | None = None,
                 thresholds: float | Sequence[float] | None = None,
                 from_logits: bool = False) -> None:
        if curve not in ("ROC", "PR"):
            raise ValueError(f"AUC: curve must be 'ROC' or 'PR', got {curve!r}")
        if summation_method not in ("interpolation", "minoring", "majoring"):
            raise ValueError(f"AUC: summation_method must be 'interpolation', 'minoring' or "
                             f"'majoring', got {summation_method!r}")
        epsilon = 1e-7
        if thresholds is not None:
            inner = sorted(float(t) for t in np.atleast_1d(thresholds))
            num_thresholds = len(inner) + 2
        elif num_thresholds < 2:
            raise ValueError(f"AUC: num_thresholds must be > 1, got {num_thresholds!r}")
        else:
            inner = [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)]
        self.num_thresholds, self.from_logits = int(num_thresholds), bool(from_logits)
        self.curve, self.summation_method = curve, summation_method
        self._given_thresholds = None if thresholds is None else inner
        super().__init__([-epsilon] + inner + [1.0 + epsilon], name, dtype)

    def _scores(self, y_pred):
        return ops.sigmoid(y_pred) if self.from_logits else y_pred

    def result(self):
        tp, fp, fn, tn = (getattr(self, c).value for c in _COUNTS)
        if self.curve == "PR" and self.summation_method == "interpolation":
            return _interpolated_pr_auc(tp, fp, fn)
        recall = _divide(tp, tp + fn)
        x, y = (_divide(fp, fp + tn), recall) if self.curve == "ROC" else \
            (recall, _divide(tp, tp + fp))
        if self.summation_method == "interpolation":
            heights = (y[:-1] + y[1:]) / 2
        else:
            heights = (np.minimum if self.summation_method == "minoring" else np.maximum)(
                y[:-1], y[1:])
        return float(np.sum((x[:-1] - x[1:]) * heights))

    def get_config(self):
        config = Metric.get_config(self)
        return {**config, "num_thresholds": self.num_thresholds, "curve": self.curve,
                "summation_method": self.summation_method,
                "thresholds": self._given_thresholds, "from_logits": self.from_logits}


def _divide(numerator, denominator):
    """numerator / denominator, 0 where the denominator is 0 (Keras's divide_no_nan)."""
    return np.where(denominator != 0, numerator / np.where(denominator != 0, denominator, 1),
                    0.0)


def _interpolated_pr_auc(tp, fp, fn):
    """Keras's ``interpolate_pr_auc``: precision interpolated linearly in the number of
    predicted positives between thresholds (Davis & Goadrich 2006)."""
    dtp = tp[:-1] - tp[1:]
    positives = tp + fp
    dp = positives[:-1] - positives[1:]
    slope = _divide(dtp, np.maximum(dp, 0))
    intercept = tp[1:] - slope * positives[1:]
    ratio = np.where((positives[:-1] > 0) & (positives[1:] > 0),
                     _divide(positives[:-1], np.maximum(positives[1:], 0)), 1.0)
    with np.errstate(divide="ignore"):
        log_ratio = np.log(ratio)
    return float(np.sum(_divide(slope * (dtp + intercept * log_ratio),
                                np.maximum(tp[1:] + fn[1:], 0))))
