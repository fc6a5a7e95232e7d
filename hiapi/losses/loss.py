"""``Loss``: Keras's loss-object contract. ``call(y_true, y_pred)`` gives per-sample values;
``__call__`` weights them by ``sample_weight`` and reduces them (mean over the batch by default).

On symbolic tensors a loss builds graph ops (this is how ``compile`` uses it); on numpy arrays
it runs eagerly and returns a number::

    hiapi.losses.MeanSquaredError()(np.array([0.0, 1.0]), np.array([[0.5], [1.0]]))  # 0.125

Subclass it as in Keras, writing ``call`` with ``hiapi.graph.ops`` (or ``hiapi.ops``)::

    class ScaledMSE(hiapi.losses.Loss):
        def call(self, y_true, y_pred):
            return ops.mean(ops.square(y_pred - y_true), axis=-1) * 2.0
"""
from __future__ import annotations

from typing import Any, Callable, Literal

import numpy as np

from hiapi.runtime.dtypes import is_float, is_low_precision
from hiapi.runtime.settings import floatx
from hiapi.hints import DTypeLike
from hiapi.graph import ops
from hiapi.graph.op import as_var
from hiapi.losses.shapes import check_same_shape, squeeze_or_expand_to_same_rank
from hiapi.utils.eager import EagerCache, is_symbolic
from hiapi.utils.naming import snake_case
from hiapi.utils.function_wrapper import WrapsFunctionConfig

REDUCTIONS = ("sum_over_batch_size", "sum", "none", "mean", "mean_with_sample_weight")
#: REDUCTIONS for the type checker; None means "none", as in Keras
Reduction = Literal["sum_over_batch_size", "sum", "none", "mean", "mean_with_sample_weight",
                    None]


class Loss:
    label_dtype: np.dtype | None = None    # dtype labels are fed as; None: the model's float dtype

    def __init__(self, name: str | None = None, reduction: Reduction = "sum_over_batch_size",
                 dtype: DTypeLike | None = None) -> None:
        reduction = "none" if reduction is None else reduction
        if reduction not in REDUCTIONS:
            raise ValueError(f"{type(self).__name__}: reduction must be one of {REDUCTIONS}, "
                             f"got {reduction!r}")
        self.reduction = reduction
        self.name = name or snake_case(type(self).__name__)
        self.dtype = dtype
        self._eager = EagerCache()

    def call(self, y_true, y_pred):
        raise NotImplementedError(f"{type(self).__name__} must define call(y_true, y_pred) "
                                  f"returning one loss value per sample")

    def __call__(self, y_true, y_pred, sample_weight=None):
        if not is_symbolic(y_true, y_pred, sample_weight):
            value = self._eager.run(self.__call__, [y_true, y_pred, sample_weight])
            return value if self.reduction == "none" else float(value)
        y_true, y_pred = as_var(y_true), as_var(y_pred)
        # Keras's dtype: the loss is computed in it; by default in floatx, so a mixed-precision
        # model's 16-bit outputs give a float32 loss (its guide's advice)
        dtype = self.dtype if self.dtype is not None else \
            floatx() if is_low_precision(y_pred.dtype) else None
        if dtype is not None:
            y_pred = _cast_keeping_logits(y_pred, dtype)
            if is_float(y_true.dtype):
                y_true = ops.cast(y_true, dtype)
        values = self.call(y_true, y_pred)
        return reduce_values(values, sample_weight, self.reduction)

    def check_labels(self, y_true_shape, y_pred_shape):
        """Raise a clear error if labels of this shape cannot go with these predictions."""

    def prepare_labels(self, y):
        return y

    def get_config(self):
        return {"name": self.name, "reduction": self.reduction, "dtype": self.dtype}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _cast_keeping_logits(y_pred, dtype):
    """``y_pred`` cast to ``dtype``, with its pre-activation (``_keras_logits``, the stable
    from-logits form's input) cast too."""
    cast = ops.cast(y_pred, dtype)
    logits = getattr(y_pred, "_keras_logits", None)
    if cast is not y_pred and logits is not None:
        cast._keras_logits = ops.cast(logits, dtype)
    return cast


def reduce_values(values, sample_weight, reduction):
    """Weighted per-sample values reduced as Keras's ``reduction`` says."""
    weight = None
    if sample_weight is not None:     # (batch,) weights scale each sample's loss
        weight = ops.cast(as_var(sample_weight), values.dtype)
        while weight.ndim < values.ndim:
            weight = ops.expand_dims(weight, -1)
        values = values * weight
    if reduction == "none":
        return values
    total = ops.sum(values)
    if reduction == "sum":
        return total
    if reduction == "mean_with_sample_weight" and weight is not None:
        denominator = ops.sum(ops.broadcast_like(weight, values))
        return total / ops.where(ops.equal(denominator, 0.0), 1.0, denominator)  # no NaN
    return total / ops.size(values, dtype=values.dtype)


class LossFunctionWrapper(WrapsFunctionConfig, Loss):
    """A loss from a function ``fn(y_true, y_pred, **kwargs) -> per-sample values``; labels and
    predictions are first brought to the same rank (Keras's leniency for (batch,) labels and
    (batch, 1) predictions)."""
    same_shape = False      # built-in wrappers check labels against predictions when compiled
    broadcasts = True       # ... allowing shapes that broadcast (all but the cross-entropies)

    def __init__(self, fn: Callable[..., Any], reduction: Reduction = "sum_over_batch_size",
                 name: str | None = None, dtype: DTypeLike | None = None, **kwargs: Any) -> None:
        super().__init__(name=name or getattr(fn, "__name__", "loss"), reduction=reduction,
                         dtype=dtype)
        self.fn = fn
        self._fn_kwargs = kwargs

    def call(self, y_true, y_pred):
        y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
        return self.fn(y_true, y_pred, **self._fn_kwargs)

    def check_labels(self, y_true_shape, y_pred_shape):
        if self.same_shape:
            check_same_shape(self.name, y_true_shape, y_pred_shape, self.broadcasts)
