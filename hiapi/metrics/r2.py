"""``R2Score``: the coefficient of determination, as Keras 3's metric of that name.

Per output column, ``R^2 = 1 - sum((y - y_pred)^2) / sum((y - mean(y))^2)`` over every sample
seen; its additive statistics (sums of y, y^2, squared residuals and weights) are counted in the
compiled step, so the result is exact over uneven batches and distributed workers::

    m = hiapi.metrics.R2Score()
    m.update_state(np.array([[1.0], [2.0], [3.0]]), np.array([[1.1], [1.9], [3.2]]))
    m.result()    # 0.97
"""
from __future__ import annotations

import warnings
from typing import Literal

import numpy as np

from hiapi.hints import DTypeLike
from hiapi.graph import ops
from hiapi.metrics.metric import StatisticsMetric

AGGREGATIONS = ("uniform_average", "variance_weighted_average", None)


class R2Score(StatisticsMetric):
    def __init__(self, class_aggregation: Literal["uniform_average", "variance_weighted_average",
                                                  None] = "uniform_average",
                 num_regressors: int = 0, name: str | None = "r2_score",
                 dtype: DTypeLike | None = None) -> None:
        super().__init__(name=name, dtype=dtype)
        if class_aggregation not in AGGREGATIONS:
            raise ValueError(f"R2Score: class_aggregation must be one of {AGGREGATIONS}, got "
                             f"{class_aggregation!r}")
        if not isinstance(num_regressors, int) or num_regressors < 0:
            raise ValueError(f"R2Score: num_regressors must be a non-negative integer, got "
                             f"{num_regressors!r}")
        self.class_aggregation, self.num_regressors = class_aggregation, num_regressors
        self._sums = None       # made once the number of output columns is known

    def _build(self, columns):
        names = ("squared_sum", "sum", "total_mse", "count")
        self._sums = [self.add_variable((columns,), "zeros", dtype="float64", name=n)
                      for n in names]
        self.num_samples = self.add_variable((), "zeros", dtype="float64", name="num_samples")

    def statistics(self, y_true, y_pred, sample_weight=None):
        if y_pred.ndim == 1:
            y_pred = ops.expand_dims(y_pred, -1)
        if y_true.ndim == 1:
            y_true = ops.expand_dims(y_true, -1)
        if y_pred.ndim != 2 or y_true.ndim != 2:
            raise ValueError(f"{self.name}: expected labels and predictions of shape (batch, "
                             f"outputs), got {y_true.shape} and {y_pred.shape}")
        if self._sums is None:
            self._build(y_pred.shape[-1])
        y_true, y_pred = ops.cast(y_true, "float64"), ops.cast(y_pred, "float64")
        weight = ops.constant(np.float64(1.0)) if sample_weight is None else \
            ops.expand_dims(ops.cast(sample_weight, "float64"), -1)
        weight = ops.broadcast_like(weight, y_true)
        weighted = y_true * weight
        return [ops.sum(y_true * weighted, axis=0), ops.sum(weighted, axis=0),
                ops.sum(ops.square(y_true - y_pred) * weight, axis=0), ops.sum(weight, axis=0),
                ops.size(y_true, dtype="float64") / float(y_true.shape[-1])]

    def _statistic_variables(self):
        return self._sums + [self.num_samples]

    def result(self):
        if self._sums is None:
            return 0.0
        squared_sum, total, total_mse, count = (v.value for v in self._sums)
        with np.errstate(divide="ignore", invalid="ignore"):
            variance = squared_sum - total * (total / count)
            raw = 1.0 - total_mse / variance
        raw = np.where(np.isfinite(raw), raw, 0.0)      # constant labels: 0, as Keras
        if self.class_aggregation == "uniform_average":
            score = float(np.mean(raw))
        elif self.class_aggregation == "variance_weighted_average":
            score = float(np.sum(variance * raw) / np.sum(variance)) if np.sum(variance) else 0.0
        else:
            return raw.tolist()
        return self._adjusted(score)

    def _adjusted(self, score):
        n, p = float(self.num_samples), self.num_regressors
        if p == 0:
            return score
        if p >= n - 1:
            warnings.warn(f"{self.name}: num_regressors={p} needs more than {p + 1} samples "
                          f"(got {n:g}); returning the unadjusted R2", UserWarning, stacklevel=3)
            return score
        return 1.0 - (1.0 - score) * (n - 1.0) / (n - p - 1.0)

    def get_config(self):
        return {**super().get_config(), "class_aggregation": self.class_aggregation,
                "num_regressors": self.num_regressors}
