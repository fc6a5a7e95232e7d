"""Accuracy metrics with Keras 3's names, arguments and defaults."""
from __future__ import annotations

from hiapi.hints import DTypeLike
from hiapi.metrics import functions
from hiapi.metrics.reduction import MeanMetricWrapper


class Accuracy(MeanMetricWrapper):
    """How often predictions equal labels exactly."""

    def __init__(self, name: str | None = "accuracy", dtype: DTypeLike | None = None) -> None:
        super().__init__(functions.accuracy, name=name, dtype=dtype)


class BinaryAccuracy(MeanMetricWrapper):
    """How often ``y_pred > threshold`` matches binary labels."""

    def __init__(self, name: str | None = "binary_accuracy", dtype: DTypeLike | None = None,
                 threshold: float = 0.5) -> None:
        super().__init__(functions.binary_accuracy, name=name, dtype=dtype,
                         threshold=float(threshold))


class CategoricalAccuracy(MeanMetricWrapper):
    """How often the top prediction is the one-hot label's class."""

    def __init__(self, name: str | None = "categorical_accuracy",
                 dtype: DTypeLike | None = None) -> None:
        super().__init__(functions.categorical_accuracy, name=name, dtype=dtype)


class SparseCategoricalAccuracy(MeanMetricWrapper):
    """How often the top prediction is the integer label's class."""

    def __init__(self, name: str | None = "sparse_categorical_accuracy",
                 dtype: DTypeLike | None = None) -> None:
        super().__init__(functions.sparse_categorical_accuracy, name=name, dtype=dtype)


class TopKCategoricalAccuracy(MeanMetricWrapper):
    """How often the one-hot label's class is among the ``k`` top predictions."""

    def __init__(self, k: int = 5, name: str | None = "top_k_categorical_accuracy",
                 dtype: DTypeLike | None = None) -> None:
        super().__init__(functions.top_k_categorical_accuracy, name=name, dtype=dtype, k=int(k))


class SparseTopKCategoricalAccuracy(MeanMetricWrapper):
    """How often the integer label's class is among the ``k`` top predictions."""

    def __init__(self, k: int = 5, name: str | None = "sparse_top_k_categorical_accuracy",
                 dtype: DTypeLike | None = None) -> None:
        super().__init__(functions.sparse_top_k_categorical_accuracy, name=name, dtype=dtype,
                         k=int(k))
