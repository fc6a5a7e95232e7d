"""Losses with Keras's names, arguments and reduction (mean over the batch by default).

Functions (``mean_squared_error``, ``categorical_crossentropy``, ...) give one value per sample
and work on numpy arrays and on symbolic tensors; classes (``MeanSquaredError``, ...) wrap them
with a reduction; ``compile(loss=...)`` takes either, a name, or any ``f(y_true, y_pred)``.
Labels of shape (batch,) go with predictions of shape (batch, 1), as in Keras.
"""
import sys

from hiapi.losses import functions
from hiapi.losses.functions import (
    KLD, MAE, MAPE, MSE, MSLE, binary_crossentropy, binary_focal_crossentropy,
    categorical_crossentropy, categorical_focal_crossentropy, categorical_hinge,
    cosine_similarity, hinge, huber, kl_divergence, kld, kullback_leibler_divergence, log_cosh,
    logcosh, mae, mape, mean_absolute_error, mean_absolute_percentage_error,
    mean_squared_error, mean_squared_logarithmic_error, mse, msle, poisson,
    sparse_categorical_crossentropy, squared_hinge)
from hiapi.serialization import objects as _objects
from hiapi.serialization.objects import deserialize_object, serialize_object
from hiapi.utils.identifiers import resolve, shared_names
from hiapi.losses.loss import REDUCTIONS, Loss, LossFunctionWrapper
from hiapi.losses.classes import (
    BinaryCrossentropy, BinaryFocalCrossentropy, CategoricalCrossentropy,
    CategoricalFocalCrossentropy, CategoricalHinge, CosineSimilarity, Hinge,
    Huber, KLDivergence, LogCosh, MeanAbsoluteError, MeanAbsolutePercentageError,
    MeanSquaredError, MeanSquaredLogarithmicError, Poisson, SparseCategoricalCrossentropy,
    SquaredHinge)

_CLASSES = {cls.__name__: cls for cls in (
    BinaryCrossentropy, BinaryFocalCrossentropy, CategoricalCrossentropy,
    CategoricalFocalCrossentropy, CategoricalHinge, CosineSimilarity, Hinge,
    Huber, KLDivergence, LogCosh, MeanAbsoluteError, MeanAbsolutePercentageError,
    MeanSquaredError, MeanSquaredLogarithmicError, Poisson, SparseCategoricalCrossentropy,
    SquaredHinge, LossFunctionWrapper)}

_BY_NAME = {
    **shared_names(_CLASSES),
    "binary_focal_crossentropy": BinaryFocalCrossentropy,
    "categorical_focal_crossentropy": CategoricalFocalCrossentropy,
    "huber": Huber, "huber_loss": Huber, "log_cosh": LogCosh, "logcosh": LogCosh,
    "KLD": KLDivergence, "kullback_leibler_divergence": KLDivergence,
}


def get(identifier):
    """A Loss from a name (``"sparse_categorical_crossentropy"``, ``"mse"``,
    ``"MeanSquaredError"``), a class, an instance, a saved config, or a function
    ``f(y_true, y_pred)`` returning per-sample values (wrapped, as in Keras)."""
    loss = resolve(identifier, Loss, _BY_NAME, _CLASSES, deserialize, LossFunctionWrapper)
    if loss is not None:
        return loss
    raise ValueError(f"Unknown loss {identifier!r}: expected one of "
                     f"{', '.join(sorted(_BY_NAME))}, a hiapi.losses.Loss or a function "
                     f"f(y_true, y_pred)")


def serialize(loss):
    """A JSON-able description of a loss (name, function or object) that ``deserialize``
    turns back into it."""
    return serialize_object(loss)


def deserialize(config, custom_objects=None):
    return deserialize_object(config, custom_objects, "loss")


_objects.register_kind("loss", Loss, sys.modules[__name__], functions)   # how saves name them
