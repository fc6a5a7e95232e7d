"""``Sum``, ``Mean`` and ``MeanMetricWrapper`` with Keras 3's semantics.

``Mean`` averages per-sample values: values of shape (batch, ...) are first averaged over the
non-batch axes, then each sample counts once (or by its ``sample_weight``), so the running
result over several batches is the mean over all samples seen, whatever the batch sizes::

    m = hiapi.metrics.Mean()
    m.update_state([1.0, 3.0]); m.update_state([5.0])
    m.result()   # 3.0
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from hiapi.hints import DTypeLike
from hiapi.graph import ops
from hiapi.losses.shapes import squeeze_or_expand_to_same_rank
from hiapi.metrics.metric import Metric, StatisticsMetric
from hiapi.utils.function_wrapper import WrapsFunctionConfig


def _samplewise(values, sample_weight):
    """Keras's ``reduce_to_samplewise_values`` in numpy: (per-sample values, weights)."""
    values = np.asarray(values, np.float64)
    if sample_weight is not None:
        weight = np.asarray(sample_weight, np.float64)
        while weight.ndim > values.ndim and weight.shape[-1] == 1:
            weight = weight[..., 0]
        while weight.ndim < values.ndim and values.shape[-1:] == (1,):
            values = values[..., 0]
        if values.ndim > weight.ndim:
            values = values.mean(axis=tuple(range(weight.ndim, values.ndim)))
        weight = np.broadcast_to(weight, values.shape)
        values = values * weight
        if weight.ndim > 1:
            weight = weight.mean(axis=tuple(range(1, weight.ndim)))
    if values.ndim > 1:
        values = values.mean(axis=tuple(range(1, values.ndim)))
    return values, None if sample_weight is None else weight


class Sum(Metric):
    """Running (weighted) sum of the values given to ``update_state(values, sample_weight)``."""

    def __init__(self, name: str | None = "sum", dtype: DTypeLike | None = None) -> None:
        super().__init__(name=name, dtype=dtype)
        self.total = self.add_variable((), "zeros", name="total")

    def update_state(self, values, sample_weight=None):
        values, _ = _samplewise(values, sample_weight)
        self.total.assign_add(np.sum(values))

    def result(self):
        return float(self.total)


class Mean(Metric):
    """Running (weighted) mean of the values given to ``update_state(values, sample_weight)``."""

    def __init__(self, name: str | None = "mean", dtype: DTypeLike | None = None) -> None:
        super().__init__(name=name, dtype=dtype)
        self.total = self.add_variable((), "zeros", dtype="float64", name="total")
        self.count = self.add_variable((), "zeros", dtype="float64", name="count")

    def update_state(self, values, sample_weight=None):
        values, weight = _samplewise(values, sample_weight)
        self.total.assign_add(np.sum(values))
        self.count.assign_add(np.sum(weight) if weight is not None else
                              values.shape[0] if values.ndim else 1)

    def result(self):
        count = float(self.count)
        return float(self.total) / count if count else 0.0


class MeanMetricWrapper(WrapsFunctionConfig, StatisticsMetric, Mean):
    """Mean over samples of ``fn(y_true, y_pred, **kwargs)`` (one value per sample), computed
    in the compiled step; ``fn`` is written in graph ops, like a loss function::

        def within_one(y_true, y_pred):
            return ops.cast(ops.abs(y_true - y_pred) < 1.0, "float32")

        model.compile(..., metrics=[hiapi.metrics.MeanMetricWrapper(within_one)])
    """

    _fn_attribute = "_fn"

    def __init__(self, fn: Callable[..., Any], name: str | None = None,
                 dtype: DTypeLike | None = None, **kwargs: Any) -> None:
        super().__init__(name=name or getattr(fn, "__name__", "mean_metric"), dtype=dtype)
        self._fn, self._fn_kwargs = fn, kwargs

    def statistics(self, y_true, y_pred, sample_weight=None):
        """[weighted sum of per-sample values, total weight]. Values are averaged down to the
        weights' axes; a masked sequence output's padding steps weigh 0 (as in Keras)."""
        mask = getattr(y_pred, "_keras_mask", None)
        y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
        values = ops.cast(self._fn(y_true, y_pred, **self._fn_kwargs), "float64")
        weight = None if sample_weight is None else ops.cast(sample_weight, "float64")
        if mask is not None and values.ndim >= mask.ndim:
            weight = _times(ops.cast(mask, "float64"), weight)
        if weight is None:
            while values.ndim > 1:                      # per-sample means, as Keras
                values = ops.mean(values, axis=-1)
            count = ops.size(values, dtype="float64") if values.ndim else 1.0
            return [ops.sum(values), ops.cast(count, "float64")]
        while values.ndim > weight.ndim:
            values = ops.mean(values, axis=-1)
        return [ops.sum(values * weight), ops.sum(ops.broadcast_like(weight, values))]

    def _statistic_variables(self):
        return [self.total, self.count]


def _times(mask, weight):
    """The mask times per-sample weights (broadcast over the mask's steps)."""
    if weight is None:
        return mask
    while weight.ndim < mask.ndim:
        weight = ops.expand_dims(weight, -1)
    return mask * weight
