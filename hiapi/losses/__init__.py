"""Losses with Keras's names, arguments and reduction (mean over the batch by default).

A loss maps ``(y_true, y_pred)`` Vars to a per-sample Var (``call``) and reduces it
(``__call__``). When ``y_pred`` is the output of a softmax or sigmoid, the probability losses
use the fused, numerically stable form on the logits (as Keras does), so a model ending in
``Dense(10, activation="softmax")`` trains as stably as one that outputs logits.
"""
import numpy as np

from hiapi.graph import ops

EPSILON = 1e-7
REDUCTIONS = ("sum_over_batch_size", "sum", "none")


class Loss:
    label_dtype = None      # dtype the labels are fed as; None: the model's float dtype

    def __init__(self, reduction="sum_over_batch_size", name=None):
        if reduction not in REDUCTIONS:
            raise ValueError(f"{type(self).__name__}: reduction must be one of {REDUCTIONS}, "
                             f"got {reduction!r}")
        self.reduction = reduction
        self.name = name or _snake(type(self).__name__)

    def call(self, y_true, y_pred):
        raise NotImplementedError

    def __call__(self, y_true, y_pred, sample_weight=None):
        values = self.call(y_true, y_pred)
        if sample_weight is not None:     # (batch,) weights scale each sample's loss
            weight = ops.cast(sample_weight, values.dtype)
            while weight.ndim < values.ndim:
                weight = ops.expand_dims(weight, -1)
            values = values * weight
        if self.reduction == "none":
            return values
        total = ops.sum(values)
        return total if self.reduction == "sum" else total / ops.size(values, dtype=values.dtype)

    def check_labels(self, y_true_shape, y_pred_shape):
        """Raise a clear error if labels of this shape cannot go with these predictions."""

    def prepare_labels(self, y):
        return y

    def get_config(self):
        return {"name": self.name, "reduction": self.reduction}


class _ProbabilityLoss(Loss):
    def __init__(self, from_logits=False, **kwargs):
        super().__init__(**kwargs)
        self.from_logits = from_logits

    def _logits(self, y_pred):
        """The logits behind ``y_pred``, or None when only probabilities are known."""
        return y_pred if self.from_logits else y_pred._keras_logits

    def get_config(self):
        return {**super().get_config(), "from_logits": self.from_logits}


class SparseCategoricalCrossentropy(_ProbabilityLoss):
    """Cross-entropy against integer class labels of shape (batch,) or (batch, 1)."""
    label_dtype = np.dtype(np.int64)

    def check_labels(self, y_true_shape, y_pred_shape):
        if len(y_true_shape) != len(y_pred_shape) - 1:
            raise ValueError(
                f"{self.name}: labels of shape {y_true_shape} do not fit predictions of shape "
                f"{y_pred_shape}: expected integer class labels of shape {y_pred_shape[:-1]} "
                f"(for one-hot labels use categorical_crossentropy)")

    def prepare_labels(self, y):
        y = np.asarray(y)
        if y.ndim >= 2 and y.shape[-1] == 1:
            y = y[..., 0]
        if y.dtype.kind == "f" and y.size and not np.all(np.mod(y, 1) == 0):
            raise ValueError(f"{self.name}: labels must be integer class indices, got "
                             f"non-integer values such as {y[np.mod(y, 1) != 0].flat[0]}")
        if y.dtype.kind not in "iuf":
            raise TypeError(f"{self.name}: labels must be integers, got dtype {y.dtype}")
        return y.astype(np.int64, copy=False)

    def call(self, y_true, y_pred):
        logits = self._logits(y_pred)
        if logits is not None:
            return ops.sparse_softmax_cross_entropy(logits, y_true)
        probs = ops.maximum(ops.minimum(y_pred, 1 - EPSILON), EPSILON)
        onehot = ops.one_hot(y_true, y_pred.shape[-1], y_pred.dtype)
        return -ops.sum(onehot * ops.log(probs), axis=-1)


class CategoricalCrossentropy(_ProbabilityLoss):
    """Cross-entropy against one-hot (or soft) labels shaped like the predictions; with
    ``label_smoothing`` s the labels become ``y * (1 - s) + s / classes`` (Szegedy et al.)."""

    def __init__(self, from_logits=False, label_smoothing=0.0, **kwargs):
        super().__init__(from_logits=from_logits, **kwargs)
        if not 0.0 <= label_smoothing <= 1.0:
            raise ValueError(f"{self.name}: label_smoothing must be in [0, 1], got "
                             f"{label_smoothing!r}")
        self.label_smoothing = float(label_smoothing)

    def get_config(self):
        return {**super().get_config(), "label_smoothing": self.label_smoothing}

    def check_labels(self, y_true_shape, y_pred_shape):
        if tuple(y_true_shape[1:]) != tuple(y_pred_shape[1:]):
            raise ValueError(
                f"{self.name}: labels of shape {y_true_shape} must have the shape of the "
                f"predictions {y_pred_shape} (for integer labels use "
                f"sparse_categorical_crossentropy, or hiapi.utils.to_categorical)")

    def call(self, y_true, y_pred):
        if self.label_smoothing:
            classes = y_pred.shape[-1]
            y_true = y_true * (1.0 - self.label_smoothing) + self.label_smoothing / classes
        logits = self._logits(y_pred)
        if logits is not None:
            return ops.softmax_cross_entropy(logits, y_true)
        probs = y_pred / ops.sum(y_pred, axis=-1, keepdims=True)
        probs = ops.maximum(ops.minimum(probs, 1 - EPSILON), EPSILON)
        return -ops.sum(y_true * ops.log(probs), axis=-1)


class BinaryCrossentropy(_ProbabilityLoss):
    """Binary cross-entropy per element, averaged over the last axis (as in Keras)."""

    def check_labels(self, y_true_shape, y_pred_shape):
        _check_same_shape(self.name, y_true_shape, y_pred_shape)

    def call(self, y_true, y_pred):
        logits = self._logits(y_pred)
        if logits is not None:
            # max(x, 0) - x*z + log(1 + exp(-|x|)): never overflows
            values = ops.maximum(logits, 0) - logits * y_true + \
                ops.log(1 + ops.exp(-ops.abs(logits)))
        else:
            p = ops.maximum(ops.minimum(y_pred, 1 - EPSILON), EPSILON)
            values = -(y_true * ops.log(p) + (1 - y_true) * ops.log(1 - p))
        return ops.mean(values, axis=-1)


class MeanSquaredError(Loss):
    def check_labels(self, y_true_shape, y_pred_shape):
        _check_same_shape(self.name, y_true_shape, y_pred_shape)

    def call(self, y_true, y_pred):
        return ops.mean(ops.square(y_pred - y_true), axis=-1)


class MeanAbsoluteError(Loss):
    def check_labels(self, y_true_shape, y_pred_shape):
        _check_same_shape(self.name, y_true_shape, y_pred_shape)

    def call(self, y_true, y_pred):
        return ops.mean(ops.abs(y_pred - y_true), axis=-1)


class Huber(Loss):
    """Quadratic within ``delta`` of the target, linear outside (Huber 1964)."""

    def __init__(self, delta=1.0, **kwargs):
        super().__init__(**kwargs)
        self.delta = float(delta)

    def check_labels(self, y_true_shape, y_pred_shape):
        _check_same_shape(self.name, y_true_shape, y_pred_shape)

    def call(self, y_true, y_pred):
        error = ops.abs(y_pred - y_true)
        quadratic = ops.minimum(error, self.delta)
        return ops.mean(0.5 * ops.square(quadratic) + self.delta * (error - quadratic), axis=-1)

    def get_config(self):
        return {**super().get_config(), "delta": self.delta}


class KLDivergence(Loss):
    """``sum(y_true * log(y_true / y_pred))`` over the last axis, both clipped to [eps, 1]."""

    def check_labels(self, y_true_shape, y_pred_shape):
        _check_same_shape(self.name, y_true_shape, y_pred_shape)

    def call(self, y_true, y_pred):
        t = ops.maximum(ops.minimum(y_true, 1.0), EPSILON)
        p = ops.maximum(ops.minimum(y_pred, 1.0), EPSILON)
        return ops.sum(t * ops.log(t / p), axis=-1)


class LossFunctionWrapper(Loss):
    """A loss from a plain function ``fn(y_true, y_pred) -> per-sample Var``."""

    def __init__(self, fn, **kwargs):
        super().__init__(name=kwargs.pop("name", getattr(fn, "__name__", "loss")), **kwargs)
        self.fn = fn

    def call(self, y_true, y_pred):
        return self.fn(y_true, y_pred)


def _check_same_shape(name, y_true_shape, y_pred_shape):
    if tuple(y_true_shape[1:]) != tuple(y_pred_shape[1:]):
        raise ValueError(f"{name}: labels of shape {y_true_shape} must have the shape of the "
                         f"predictions {y_pred_shape}")


def _snake(name):
    from hiapi.utils.naming import snake_case
    return snake_case(name)


_BY_NAME = {
    "sparse_categorical_crossentropy": SparseCategoricalCrossentropy,
    "categorical_crossentropy": CategoricalCrossentropy,
    "binary_crossentropy": BinaryCrossentropy,
    "mean_squared_error": MeanSquaredError,
    "mse": MeanSquaredError,
    "mean_absolute_error": MeanAbsoluteError,
    "mae": MeanAbsoluteError,
    "huber": Huber,
    "kl_divergence": KLDivergence,
    "kld": KLDivergence,
}


def get(identifier):
    """A Loss from a name (``"sparse_categorical_crossentropy"``, ``"mse"``) or an instance."""
    if isinstance(identifier, Loss):
        return identifier
    if isinstance(identifier, str) and identifier in _BY_NAME:
        return _BY_NAME[identifier](name=None if identifier in ("mse", "mae", "kld")
                                    else identifier)
    if isinstance(identifier, type) and issubclass(identifier, Loss):
        return identifier()
    if callable(identifier):
        return LossFunctionWrapper(identifier)
    raise ValueError(f"Unknown loss {identifier!r}: expected one of "
                     f"{', '.join(sorted(_BY_NAME))} or a hiapi.losses.Loss")
