"""Metrics with Keras 3's names, classes and ``Metric`` API.

``compile(metrics=[...])`` takes names (``"accuracy"``, ``"mae"``, ``"mse"``, ``"auc"``...),
functions ``f(y_true, y_pred)`` returning per-sample values, ``Metric`` objects, or subclasses
of ``hiapi.metrics.Metric`` written as in Keras's guide (see ``metric.py``). Every metric can
also be used on its own on arrays: ``m.update_state(y_true, y_pred); m.result()``.
"""
import copy
import sys

from hiapi.metrics import functions
from hiapi.metrics.functions import (
    accuracy, binary_accuracy, categorical_accuracy, sparse_categorical_accuracy,
    sparse_top_k_categorical_accuracy, top_k_categorical_accuracy)
from hiapi.metrics.metric import Metric, MetricVariable, runs_in_steps  # noqa: F401
from hiapi.serialization import objects as _objects
from hiapi.serialization.objects import deserialize_object, serialize_object
from hiapi.utils.identifiers import resolve, shared_names
from hiapi.metrics.reduction import Mean, MeanMetricWrapper, Sum
from hiapi.metrics.accuracy_metrics import (
    Accuracy, BinaryAccuracy, CategoricalAccuracy, SparseCategoricalAccuracy,
    SparseTopKCategoricalAccuracy, TopKCategoricalAccuracy)
from hiapi.metrics.regression import (
    CosineSimilarity, LogCoshError, MeanAbsoluteError, MeanAbsolutePercentageError,
    MeanSquaredError, MeanSquaredLogarithmicError, RootMeanSquaredError)
from hiapi.metrics.confusion import AUC, Precision, Recall
from hiapi.metrics.r2 import R2Score
from hiapi.metrics.f_score import F1Score, FBetaScore
from hiapi.losses import (BinaryCrossentropy as _BCE, CategoricalCrossentropy as _CCE,
                          SparseCategoricalCrossentropy as _SCCE, KLDivergence as _KLD,
                          Hinge as _Hinge, SquaredHinge as _SquaredHinge,
                          CategoricalHinge as _CategoricalHinge, Poisson as _Poisson)


def _loss_metric(class_name, loss_class, default_name):
    """A metric that averages a loss function, as Keras's probabilistic and hinge metrics."""
    def __init__(self, name=default_name, dtype=None, **kwargs):
        loss = loss_class(**kwargs)
        MeanMetricWrapper.__init__(self, loss.fn, name=name, dtype=dtype, **loss._fn_kwargs)
    return type(class_name, (MeanMetricWrapper,), {"__init__": __init__,
                                                    "__module__": __name__,
                                                    "__doc__": f"Mean {default_name}."})


BinaryCrossentropy = _loss_metric("BinaryCrossentropy", _BCE, "binary_crossentropy")
CategoricalCrossentropy = _loss_metric("CategoricalCrossentropy", _CCE,
                                       "categorical_crossentropy")
SparseCategoricalCrossentropy = _loss_metric("SparseCategoricalCrossentropy", _SCCE,
                                             "sparse_categorical_crossentropy")
KLDivergence = _loss_metric("KLDivergence", _KLD, "kl_divergence")
Hinge = _loss_metric("Hinge", _Hinge, "hinge")
SquaredHinge = _loss_metric("SquaredHinge", _SquaredHinge, "squared_hinge")
CategoricalHinge = _loss_metric("CategoricalHinge", _CategoricalHinge, "categorical_hinge")
Poisson = _loss_metric("Poisson", _Poisson, "poisson")

_CLASSES = {cls.__name__: cls for cls in (
    Accuracy, BinaryAccuracy, CategoricalAccuracy, SparseCategoricalAccuracy,
    SparseTopKCategoricalAccuracy, TopKCategoricalAccuracy, CosineSimilarity, LogCoshError,
    MeanAbsoluteError, MeanAbsolutePercentageError, MeanSquaredError,
    MeanSquaredLogarithmicError, RootMeanSquaredError, R2Score, AUC, Precision, Recall, Mean,
    Sum, F1Score, FBetaScore,
    BinaryCrossentropy, CategoricalCrossentropy, SparseCategoricalCrossentropy, KLDivergence,
    Hinge, SquaredHinge, CategoricalHinge, Poisson)}

_BY_NAME = {
    **shared_names(_CLASSES),
    "binary_accuracy": BinaryAccuracy, "categorical_accuracy": CategoricalAccuracy,
    "sparse_categorical_accuracy": SparseCategoricalAccuracy,
    "top_k_categorical_accuracy": TopKCategoricalAccuracy,
    "sparse_top_k_categorical_accuracy": SparseTopKCategoricalAccuracy,
    "root_mean_squared_error": RootMeanSquaredError, "rmse": RootMeanSquaredError,
    "logcosh": LogCoshError, "log_cosh": LogCoshError,
    "r2_score": R2Score, "f1_score": F1Score, "fbeta_score": FBetaScore,
    "precision": Precision, "recall": Recall, "auc": AUC,
}


def _by_shapes(identifier, y_true_shape, y_pred_shape):
    """Keras's resolution of "accuracy" and "crossentropy": binary when the predictions have
    one column, sparse when the labels have fewer axes (or one column against several),
    categorical otherwise."""
    binary = y_pred_shape is not None and y_pred_shape[-1] == 1
    sparse = y_true_shape is not None and y_pred_shape is not None and (
        len(y_true_shape) < len(y_pred_shape) or
        (y_true_shape[-1] == 1 and y_pred_shape[-1] != 1))
    if identifier in ("accuracy", "acc"):
        cls = BinaryAccuracy if binary else SparseCategoricalAccuracy if sparse else \
            CategoricalAccuracy
    else:
        cls = BinaryCrossentropy if binary else SparseCategoricalCrossentropy if sparse else \
            CategoricalCrossentropy
    return cls(name=identifier)


def get(identifier, y_true_shape=None, y_pred_shape=None):
    """A Metric from a name, a class, a function ``f(y_true, y_pred)``, a saved config or an
    instance. Names keep the spelling given (``"mae"`` logs as ``mae``)."""
    if identifier in ("accuracy", "acc", "crossentropy", "ce"):
        return _by_shapes(identifier, y_true_shape, y_pred_shape)
    metric = resolve(identifier, Metric, _BY_NAME, _CLASSES, deserialize, MeanMetricWrapper,
                     keep_name=True)
    if metric is not None:
        return metric
    raise ValueError(f"Unknown metric {identifier!r}: expected 'accuracy' or one of "
                     f"{', '.join(sorted(_BY_NAME))}, a function(y_true, y_pred), or a "
                     f"hiapi.metrics.Metric")


def clone(metric):
    """A fresh copy of ``metric`` with the same configuration and no accumulated state."""
    try:
        fresh = type(metric).from_config(metric.get_config())
    except (TypeError, ValueError, NotImplementedError):
        fresh = copy.deepcopy(metric)
    fresh.reset_state()
    return fresh


def serialize(metric):
    return serialize_object(metric)


def deserialize(config, custom_objects=None):
    return deserialize_object(config, custom_objects, "metric")


_objects.register_kind("metric", Metric, sys.modules[__name__], functions)   # how saves name them
