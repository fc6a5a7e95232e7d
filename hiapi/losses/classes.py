"""Loss classes with Keras 3's names, arguments and defaults, each wrapping its function in
``functions.py``::

    model.compile(loss=hiapi.losses.Huber(delta=0.5), optimizer="adam")
"""
from __future__ import annotations

from typing import Any, Callable, Final

import numpy as np

from hiapi.hints import DTypeLike
from hiapi.ops.nn import class_indices
from hiapi.losses import functions
from hiapi.losses.loss import LossFunctionWrapper, Reduction
from hiapi.losses.shapes import shape_text

SUM_OVER_BATCH: Final = "sum_over_batch_size"


class _Builtin(LossFunctionWrapper):
    """A built-in loss: its labels must fit its predictions (checked when compiled)."""
    same_shape = True
    function: Callable[..., Any] = None  # type: ignore[assignment]  # every subclass sets it

    def __init__(self, reduction: Reduction = SUM_OVER_BATCH, name: str | None = None,
                 dtype: DTypeLike | None = None, **kwargs: Any) -> None:
        super().__init__(type(self).function, reduction=reduction, name=name, dtype=dtype,
                         **kwargs)


def _simple(class_name, fn, default_name, doc):
    """A loss class whose only arguments are Keras's ``reduction, name, dtype``."""
    def __init__(self, reduction=SUM_OVER_BATCH, name=default_name, dtype=None):
        _Builtin.__init__(self, reduction=reduction, name=name, dtype=dtype)
    return type(class_name, (_Builtin,), {"__init__": __init__, "function": staticmethod(fn),
                                          "__doc__": doc, "__module__": __name__})


MeanSquaredError = _simple("MeanSquaredError", functions.mean_squared_error,
                           "mean_squared_error", "Mean of squared errors over the last axis.")
MeanAbsoluteError = _simple("MeanAbsoluteError", functions.mean_absolute_error,
                            "mean_absolute_error", "Mean of absolute errors over the last axis.")
MeanAbsolutePercentageError = _simple(
    "MeanAbsolutePercentageError", functions.mean_absolute_percentage_error,
    "mean_absolute_percentage_error", "100 * mean(|y_true - y_pred| / |y_true|).")
MeanSquaredLogarithmicError = _simple(
    "MeanSquaredLogarithmicError", functions.mean_squared_logarithmic_error,
    "mean_squared_logarithmic_error", "Mean of squared differences of log(1 + y).")
LogCosh = _simple("LogCosh", functions.log_cosh, "log_cosh",
                  "Mean of log(cosh(error)): squared near 0, absolute far away.")
Hinge = _simple("Hinge", functions.hinge, "hinge", "mean(max(1 - y_true * y_pred, 0)).")
SquaredHinge = _simple("SquaredHinge", functions.squared_hinge, "squared_hinge",
                       "mean(max(1 - y_true * y_pred, 0)^2).")
CategoricalHinge = _simple("CategoricalHinge", functions.categorical_hinge,
                           "categorical_hinge", "Hinge loss between one-hot labels and scores.")
KLDivergence = _simple("KLDivergence", functions.kl_divergence, "kl_divergence",
                       "sum(y_true * log(y_true / y_pred)) over the last axis.")
Poisson = _simple("Poisson", functions.poisson, "poisson",
                  "mean(y_pred - y_true * log(y_pred)).")


class Huber(_Builtin):
    """Quadratic within ``delta`` of the target, linear outside (Huber 1964)."""
    function = staticmethod(functions.huber)

    def __init__(self, delta: float = 1.0, reduction: Reduction = SUM_OVER_BATCH,
                 name: str | None = "huber_loss", dtype: DTypeLike | None = None) -> None:
        super().__init__(reduction=reduction, name=name, dtype=dtype, delta=float(delta))
        self.delta = float(delta)


class CosineSimilarity(_Builtin):
    """Negative cosine similarity along ``axis`` (minimising it aligns the vectors)."""
    function = staticmethod(functions.cosine_similarity)

    def __init__(self, axis: int = -1, reduction: Reduction = SUM_OVER_BATCH,
                 name: str | None = "cosine_similarity", dtype: DTypeLike | None = None) -> None:
        super().__init__(reduction=reduction, name=name, dtype=dtype, axis=int(axis))


class _Probabilistic(_Builtin):
    broadcasts = False      # Keras's backends require labels shaped like the predictions

    def __init__(self, from_logits: bool = False, label_smoothing: float = 0.0, axis: int = -1,
                 reduction: Reduction = SUM_OVER_BATCH, name: str | None = None,
                 dtype: DTypeLike | None = None) -> None:
        if not 0.0 <= label_smoothing <= 1.0:
            raise ValueError(f"{type(self).__name__}: label_smoothing must be in [0, 1], got "
                             f"{label_smoothing!r}")
        super().__init__(reduction=reduction, name=name, dtype=dtype,
                         from_logits=bool(from_logits), label_smoothing=float(label_smoothing),
                         axis=int(axis))
        self.from_logits, self.label_smoothing = bool(from_logits), float(label_smoothing)


class BinaryCrossentropy(_Probabilistic):
    """Binary cross-entropy per element, averaged over the last axis (as in Keras)."""
    function = staticmethod(functions.binary_crossentropy)

    def __init__(self, from_logits: bool = False, label_smoothing: float = 0.0, axis: int = -1,
                 reduction: Reduction = SUM_OVER_BATCH, name: str | None = "binary_crossentropy",
                 dtype: DTypeLike | None = None) -> None:
        super().__init__(from_logits, label_smoothing, axis, reduction, name, dtype)


class CategoricalCrossentropy(_Probabilistic):
    """Cross-entropy against one-hot (or soft) labels shaped like the predictions."""
    function = staticmethod(functions.categorical_crossentropy)

    def __init__(self, from_logits: bool = False, label_smoothing: float = 0.0, axis: int = -1,
                 reduction: Reduction = SUM_OVER_BATCH,
                 name: str | None = "categorical_crossentropy",
                 dtype: DTypeLike | None = None) -> None:
        super().__init__(from_logits, label_smoothing, axis, reduction, name, dtype)

    def check_labels(self, y_true_shape, y_pred_shape):
        same_rank = len(y_true_shape) == len(y_pred_shape)
        if len(y_true_shape) == len(y_pred_shape) - 1 or (
                same_rank and y_true_shape[-1] == 1 != y_pred_shape[-1]):
            raise ValueError(
                f"{self.name}: labels of shape {shape_text(y_true_shape)} must have the shape of "
                f"the predictions {shape_text(y_pred_shape)}: these look like integer class "
                f"labels (use sparse_categorical_crossentropy, or hiapi.utils.to_categorical)")
        super().check_labels(y_true_shape, y_pred_shape)


class BinaryFocalCrossentropy(_Builtin):
    """Binary cross-entropy that down-weights easy examples (see ``binary_focal_crossentropy``)."""
    broadcasts = False
    function = staticmethod(functions.binary_focal_crossentropy)

    def __init__(self, apply_class_balancing: bool = False, alpha: float = 0.25, gamma: float = 2.0,
                 from_logits: bool = False, label_smoothing: float = 0.0, axis: int = -1,
                 reduction: Reduction = SUM_OVER_BATCH,
                 name: str | None = "binary_focal_crossentropy",
                 dtype: DTypeLike | None = None) -> None:
        super().__init__(reduction=reduction, name=name, dtype=dtype,
                         apply_class_balancing=bool(apply_class_balancing), alpha=float(alpha),
                         gamma=float(gamma), from_logits=bool(from_logits),
                         label_smoothing=float(label_smoothing), axis=int(axis))


class CategoricalFocalCrossentropy(_Builtin):
    """Categorical cross-entropy that down-weights easy examples (see
    ``categorical_focal_crossentropy``)."""
    broadcasts = False
    function = staticmethod(functions.categorical_focal_crossentropy)

    def __init__(self, alpha: float = 0.25, gamma: float = 2.0, from_logits: bool = False,
                 label_smoothing: float = 0.0, axis: int = -1,
                 reduction: Reduction = SUM_OVER_BATCH,
                 name: str | None = "categorical_focal_crossentropy",
                 dtype: DTypeLike | None = None) -> None:
        super().__init__(reduction=reduction, name=name, dtype=dtype, alpha=float(alpha),
                         gamma=float(gamma), from_logits=bool(from_logits),
                         label_smoothing=float(label_smoothing), axis=int(axis))


class SparseCategoricalCrossentropy(_Builtin):
    """Cross-entropy against integer class labels of shape (batch,) or (batch, 1); labels equal
    to ``ignore_class`` contribute 0."""
    label_dtype = np.dtype(np.int64)
    function = staticmethod(functions.sparse_categorical_crossentropy)

    def __init__(self, from_logits: bool = False, ignore_class: int | None = None,
                 reduction: Reduction = SUM_OVER_BATCH,
                 name: str | None = "sparse_categorical_crossentropy",
                 dtype: DTypeLike | None = None) -> None:
        super().__init__(reduction=reduction, name=name, dtype=dtype,
                         from_logits=bool(from_logits), ignore_class=ignore_class)
        self.from_logits = bool(from_logits)

    def call(self, y_true, y_pred):      # ranks differ by design: no alignment
        return self.fn(y_true, y_pred, **self._fn_kwargs)

    def check_labels(self, y_true_shape, y_pred_shape):
        if not (len(y_true_shape) == len(y_pred_shape) - 1 or (
                len(y_true_shape) == len(y_pred_shape) and y_true_shape[-1] == 1)):
            raise ValueError(
                f"{self.name}: labels of shape {shape_text(y_true_shape)} do not fit predictions "
                f"of shape {shape_text(y_pred_shape)}: expected integer class labels of shape "
                f"{shape_text(y_pred_shape[:-1])} (for one-hot labels use "
                f"categorical_crossentropy)")

    def prepare_labels(self, y):
        """Integer labels, shape kept: metrics see the labels as given (as in Keras), the loss
        drops a trailing axis of size 1 itself."""
        return class_indices(y, self.name)
