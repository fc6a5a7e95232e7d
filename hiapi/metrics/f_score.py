"""``FBetaScore`` and ``F1Score`` as Keras 3's metrics: the weighted harmonic mean of precision
and recall per class, from true/false positive and false negative counts summed over batches::

    m = hiapi.metrics.F1Score(average="macro", threshold=0.5)
    m.update_state(np.array([[1, 0], [0, 1]]), np.array([[0.8, 0.3], [0.6, 0.7]]))
    m.result()    # mean over classes of 2 * precision * recall / (precision + recall)
"""
from __future__ import annotations

from typing import Literal

import numpy as np

from hiapi.hints import DTypeLike
from hiapi.graph import ops
from hiapi.metrics.metric import StatisticsMetric

AVERAGES = (None, "micro", "macro", "weighted")
EPSILON = 1e-7


class FBetaScore(StatisticsMetric):
    """``average``: None (one score per class), "micro" (counts pooled over classes),
    "macro" (mean of the class scores) or "weighted" (weighted by each class's support).
    ``threshold``: predictions above it are positive; None marks each row's largest."""

    def __init__(self, average: Literal["micro", "macro", "weighted"] | None = None,
                 beta: float = 1.0, threshold: float | None = None,
                 name: str | None = "fbeta_score", dtype: DTypeLike | None = None) -> None:
        super().__init__(name=name, dtype=dtype)
        if average not in AVERAGES:
            raise ValueError(f"{type(self).__name__}: average must be one of {AVERAGES}, got "
                             f"{average!r}")
        if not beta > 0:
            raise ValueError(f"{type(self).__name__}: beta must be > 0, got {beta!r}")
        if threshold is not None and not 0.0 < threshold <= 1.0:
            raise ValueError(f"{type(self).__name__}: threshold must be in (0, 1], got "
                             f"{threshold!r}")
        self.average, self.beta, self.threshold = average, float(beta), threshold
        self._counts = None     # made once the number of classes is known

    def _build(self, classes):
        shape = () if self.average == "micro" else (classes,)
        names = ("true_positives", "false_positives", "false_negatives", "intermediate_weights")
        self._counts = [self.add_variable(shape if n != "intermediate_weights" else (classes,),
                                          "zeros", dtype="float64", name=n) for n in names]

    def statistics(self, y_true, y_pred, sample_weight=None):
        if y_pred.ndim != 2 or y_true.ndim != 2:
            raise ValueError(f"{self.name}: expected labels and predictions of shape (batch, "
                             f"classes), got {y_true.shape} and {y_pred.shape}")
        if self._counts is None:
            self._build(y_pred.shape[-1])
        if self.threshold is None:
            predicted = y_pred >= ops.max(y_pred, axis=-1, keepdims=True)
        else:
            predicted = y_pred > self.threshold
        predicted, y_true = ops.cast(predicted, "float64"), ops.cast(y_true, "float64")
        weight = None if sample_weight is None else \
            ops.expand_dims(ops.cast(sample_weight, "float64"), -1)
        axis = None if self.average == "micro" else 0

        def total(values, axis=axis):
            return ops.sum(values if weight is None else values * weight, axis=axis)

        return [total(predicted * y_true), total(predicted * (1.0 - y_true)),
                total((1.0 - predicted) * y_true), total(y_true, axis=0)]

    def _statistic_variables(self):
        return self._counts

    def result(self):
        if self._counts is None:
            return 0.0
        tp, fp, fn, support = (v.value for v in self._counts)
        precision = tp / (tp + fp + EPSILON)
        recall = tp / (tp + fn + EPSILON)
        b2 = self.beta ** 2
        score = (1 + b2) * precision * recall / (b2 * precision + recall + EPSILON)
        if self.average == "weighted":
            score = np.sum(score * support / (np.sum(support) + EPSILON))
        elif self.average is not None:
            score = np.mean(score)
        return float(score) if np.ndim(score) == 0 else score.tolist()

    def get_config(self):
        return {**super().get_config(), "average": self.average, "beta": self.beta,
                "threshold": self.threshold}


class F1Score(FBetaScore):
    """``FBetaScore`` with beta = 1: the harmonic mean of precision and recall."""

    def __init__(self, average: Literal["micro", "macro", "weighted"] | None = None,
                 threshold: float | None = None, name: str | None = "f1_score",
                 dtype: DTypeLike | None = None) -> None:
        super().__init__(average=average, beta=1.0, threshold=threshold, name=name, dtype=dtype)

    def get_config(self):
        config = super().get_config()
        del config["beta"]
        return config
