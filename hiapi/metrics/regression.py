"""Regression metrics with Keras 3's names: running means over all samples seen (weighted by
sample count, so the result does not depend on how the data was batched)::

    model.compile(optimizer="adam", loss="mse",
                  metrics=["mae", hiapi.metrics.RootMeanSquaredError()])
"""
from __future__ import annotations

import math

from hiapi.hints import DTypeLike
from hiapi.metrics import functions
from hiapi.metrics.reduction import MeanMetricWrapper


def _wrapper(class_name, fn, default_name, doc):
    def __init__(self, name=default_name, dtype=None):
        MeanMetricWrapper.__init__(self, fn, name=name, dtype=dtype)
    return type(class_name, (MeanMetricWrapper,), {"__init__": __init__, "__doc__": doc,
                                                    "__module__": __name__})


MeanSquaredError = _wrapper("MeanSquaredError", functions.mean_squared_error,
                            "mean_squared_error", "Mean of (y_pred - y_true)^2.")
MeanAbsoluteError = _wrapper("MeanAbsoluteError", functions.mean_absolute_error,
                             "mean_absolute_error", "Mean of |y_pred - y_true|.")
MeanAbsolutePercentageError = _wrapper(
    "MeanAbsolutePercentageError", functions.mean_absolute_percentage_error,
    "mean_absolute_percentage_error", "Mean of 100 * |y_true - y_pred| / |y_true|.")
MeanSquaredLogarithmicError = _wrapper(
    "MeanSquaredLogarithmicError", functions.mean_squared_logarithmic_error,
    "mean_squared_logarithmic_error", "Mean of (log(1 + y_pred) - log(1 + y_true))^2.")
LogCoshError = _wrapper("LogCoshError", functions.log_cosh, "logcosh",
                        "Mean of log(cosh(y_pred - y_true)).")


class CosineSimilarity(MeanMetricWrapper):
    """Mean cosine similarity between labels and predictions along ``axis``."""

    def __init__(self, name: str | None = "cosine_similarity", dtype: DTypeLike | None = None,
                 axis: int = -1) -> None:
        super().__init__(functions.cosine_similarity, name=name, dtype=dtype, axis=int(axis))


class RootMeanSquaredError(MeanMetricWrapper):
    """``sqrt`` of the mean squared error over every element seen."""

    def __init__(self, name: str | None = "root_mean_squared_error",
                 dtype: DTypeLike | None = None) -> None:
        super().__init__(functions.squared_error, name=name, dtype=dtype)

    def result(self):
        return math.sqrt(super().result())
