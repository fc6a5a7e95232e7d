"""Metric functions with Keras's names: one value per sample, in graph ops, so they run inside
the compiled step (``MeanMetricWrapper`` averages them). Labels and predictions are aligned as
for losses: labels of shape (batch,) go with predictions of shape (batch, 1).

The regression metrics are the loss functions of the same names (``hiapi.losses``).
"""
from hiapi.graph import ops
from hiapi.losses.functions import (  # noqa: F401 (re-exported with Keras's metric names)
    cosine_similarity as _negative_cosine, log_cosh, mean_absolute_error,
    mean_absolute_percentage_error, mean_squared_error, mean_squared_logarithmic_error,
    loss_function, poisson, kl_divergence, hinge, squared_hinge, categorical_hinge)
from hiapi.losses.shapes import squeeze_or_expand_to_same_rank


@loss_function
def accuracy(y_true, y_pred):
    """1 where the prediction equals the label exactly."""
    y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
    return ops.cast(ops.equal(ops.cast(y_true, y_pred.dtype), y_pred), "float32")


@loss_function
def binary_accuracy(y_true, y_pred, threshold=0.5):
    """Mean over the last axis of ``(y_pred > threshold) == y_true``."""
    y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
    predicted = ops.cast(y_pred > threshold, "float32")
    return ops.mean(ops.cast(ops.equal(ops.cast(y_true, "float32"), predicted), "float32"),
                    axis=-1)


@loss_function
def categorical_accuracy(y_true, y_pred):
    """1 where the largest prediction is at the one-hot label's class."""
    return ops.cast(ops.equal(ops.argmax(y_pred, -1), ops.argmax(y_true, -1)), "float32")


def _class_labels(y_true, y_pred):
    """Integer labels shaped like ``y_pred`` without its last axis."""
    if len(y_true.shape) == len(y_pred.shape) and y_true.shape[-1] == 1:
        y_true = ops.squeeze(y_true, -1)
    return ops.class_indices(y_true, "sparse categorical metric")


@loss_function
def sparse_categorical_accuracy(y_true, y_pred):
    """1 where the largest prediction is at the integer label's class."""
    return ops.cast(ops.equal(ops.argmax(y_pred, -1), _class_labels(y_true, y_pred)),
                    "float32")


def _in_top_k(labels, y_pred, k):
    """1 where the true class's score is among the k highest (ties count as in), else 0."""
    onehot = ops.one_hot(labels, y_pred.shape[-1], y_pred.dtype)
    true_score = ops.sum(y_pred * onehot, axis=-1, keepdims=True)
    higher = ops.sum(ops.cast(y_pred > true_score, "float32"), axis=-1)
    return ops.cast(higher < k, "float32")


@loss_function
def sparse_top_k_categorical_accuracy(y_true, y_pred, k=5):
    return _in_top_k(_class_labels(y_true, y_pred), y_pred, int(k))


@loss_function
def top_k_categorical_accuracy(y_true, y_pred, k=5):
    return _in_top_k(ops.argmax(y_true, -1), y_pred, int(k))


@loss_function
def cosine_similarity(y_true, y_pred, axis=-1):
    """Cosine of the angle between labels and predictions along ``axis`` (1 is best)."""
    return -_negative_cosine(y_true, y_pred, axis=axis)


@loss_function
def squared_error(y_true, y_pred):
    """Elementwise squared error (``RootMeanSquaredError`` averages it, then takes the root)."""
    y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
    return ops.square(y_pred - ops.cast(y_true, y_pred.dtype))


mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error
mape = MAPE = mean_absolute_percentage_error
msle = MSLE = mean_squared_logarithmic_error
logcosh = log_cosh
