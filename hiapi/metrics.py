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


_BY_NAME = {f.__name__: f for f in (sparse_categorical_accuracy, categorical_accuracy,
                                    binary_accuracy)}


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
    if callable(identifier):
        return MeanMetricWrapper(identifier)
    raise ValueError(f"Unknown metric {identifier!r}: expected 'accuracy' or one of "
                     f"{', '.join(sorted(_BY_NAME))}, a function(y_true, y_pred), or a "
                     f"hiapi.metrics.Metric")


def _snake(name):
    from hiapi.utils.naming import snake_case
    return snake_case(name)
