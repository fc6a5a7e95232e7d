"""Loss functions with Keras's names and arguments: one value per sample, reduced over the last
axis (``axis``), never over the batch.

Each works on symbolic tensors (inside a custom loss, a layer or a metric) by building graph
ops, and on numpy arrays eagerly, returning an array::

    hiapi.losses.mean_squared_error(np.array([1.0, 2.0]), np.array([[1.5], [2.0]]))
    # array([0.25, 0.  ])  -- labels (2,) and predictions (2, 1) are aligned as in Keras

    def my_loss(y_true, y_pred):
        huber = hiapi.losses.huber(y_true, y_pred, delta=0.5)
        return huber + 0.1 * hiapi.losses.mae(y_true, y_pred)

When ``y_pred`` comes out of a softmax or sigmoid, the cross-entropies use the numerically
stable form on the logits behind it, as Keras does.
"""
import functools
import inspect
import math

from hiapi.graph import ops
from hiapi.graph.op import as_var
from hiapi.losses.shapes import check_same_shape, shape_text, squeeze_or_expand_to_same_rank
from hiapi.utils.eager import is_symbolic, run_eagerly

EPSILON = 1e-7


def loss_function(fn):
    """Let ``fn(y_true, y_pred, **options)``, written in graph ops, also run on arrays."""
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def wrapper(y_true, y_pred, *args, **kwargs):
        bound = signature.bind(y_true, y_pred, *args, **kwargs)
        bound.apply_defaults()
        options = {k: v for k, v in bound.arguments.items() if k not in ("y_true", "y_pred")}
        if is_symbolic(y_true, y_pred):
            return fn(as_var(y_true), as_var(y_pred), **options)
        key = (fn, tuple(sorted(options.items())))
        return run_eagerly(lambda t, p: fn(t, p, **options), [y_true, y_pred], key)

    return wrapper


def _aligned(name, y_true, y_pred, broadcast=True):
    """Labels cast to the predictions' dtype, both at the same rank, or a named error; the
    shapes must broadcast together, or with ``broadcast=False`` (cross-entropies) be equal."""
    y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
    check_same_shape(name, y_true.shape, y_pred.shape, broadcast)
    return ops.cast(y_true, y_pred.dtype), y_pred


def _to_last(x, axis):
    """``x`` with ``axis`` moved to the end (the axis every loss reduces over)."""
    axis = axis % len(x.shape)
    if axis == len(x.shape) - 1:
        return x
    order = [a for a in range(len(x.shape)) if a != axis] + [axis]
    return ops.transpose(x, order)


def _clip(x, low=EPSILON, high=1.0 - EPSILON):
    return ops.maximum(ops.minimum(x, high), low)


def _logits(y_pred, from_logits, axis=-1):
    """The logits behind ``y_pred``: itself with from_logits, the input of a final softmax or
    sigmoid when reducing over the last axis, else None."""
    if from_logits:
        return y_pred
    return getattr(y_pred, "_keras_logits", None) if axis in (-1, len(y_pred.shape) - 1) else None


# ---- regression ------------------------------------------------------------------------------
@loss_function
def mean_squared_error(y_true, y_pred):
    y_true, y_pred = _aligned("mean_squared_error", y_true, y_pred)
    return ops.mean(ops.square(y_pred - y_true), axis=-1)


@loss_function
def mean_absolute_error(y_true, y_pred):
    y_true, y_pred = _aligned("mean_absolute_error", y_true, y_pred)
    return ops.mean(ops.abs(y_pred - y_true), axis=-1)


@loss_function
def mean_absolute_percentage_error(y_true, y_pred):
    """``100 * mean(|y_true - y_pred| / max(|y_true|, eps))``."""
    y_true, y_pred = _aligned("mean_absolute_percentage_error", y_true, y_pred)
    error = ops.abs((y_true - y_pred) / ops.maximum(ops.abs(y_true), EPSILON))
    return 100.0 * ops.mean(error, axis=-1)


@loss_function
def mean_squared_logarithmic_error(y_true, y_pred):
    """``mean((log(1 + max(y_pred, eps)) - log(1 + max(y_true, eps)))^2)``."""
    y_true, y_pred = _aligned("mean_squared_logarithmic_error", y_true, y_pred)
    first = ops.log(ops.maximum(y_pred, EPSILON) + 1.0)
    second = ops.log(ops.maximum(y_true, EPSILON) + 1.0)
    return ops.mean(ops.square(first - second), axis=-1)


@loss_function
def huber(y_true, y_pred, delta=1.0):
    """Quadratic within ``delta`` of the target, linear outside (Huber 1964)."""
    y_true, y_pred = _aligned("huber", y_true, y_pred)
    error = ops.abs(y_pred - y_true)
    quadratic = ops.minimum(error, float(delta))
    return ops.mean(0.5 * ops.square(quadratic) + float(delta) * (error - quadratic), axis=-1)


@loss_function
def log_cosh(y_true, y_pred):
    """``mean(log(cosh(y_pred - y_true)))``, as ``|x| + log(1 + exp(-2|x|)) - log 2`` so large
    errors do not overflow."""
    y_true, y_pred = _aligned("log_cosh", y_true, y_pred)
    x = ops.abs(y_pred - y_true)
    return ops.mean(x + ops.log(1.0 + ops.exp(-2.0 * x)) - math.log(2.0), axis=-1)


def _l2_normalize(x, axis):
    return x / ops.sqrt(ops.maximum(ops.sum(ops.square(x), axis=axis, keepdims=True), 1e-12))


@loss_function
def cosine_similarity(y_true, y_pred, axis=-1):
    """Negative cosine similarity along ``axis`` (-1: opposite, 0: orthogonal, 1 is best
    reached at -1), so minimising it aligns the vectors, as Keras's loss."""
    y_true, y_pred = _aligned("cosine_similarity", y_true, y_pred)
    return -ops.sum(_l2_normalize(y_true, axis) * _l2_normalize(y_pred, axis), axis=axis)


# ---- margins ---------------------------------------------------------------------------------
def _hinge_labels(y_true):
    """Labels in {0, 1} become {-1, 1} (Keras's rule: only when every label is 0 or 1)."""
    binary = ops.cast(ops.equal(y_true, 0.0), y_true.dtype) + \
        ops.cast(ops.equal(y_true, 1.0), y_true.dtype)
    all_binary = ops.equal(ops.sum(1.0 - binary), 0.0)
    return ops.where(all_binary, 2.0 * y_true - 1.0, y_true)


@loss_function
def hinge(y_true, y_pred):
    """``mean(max(1 - y_true * y_pred, 0))`` with labels -1/1 (0/1 labels are converted)."""
    y_true, y_pred = _aligned("hinge", y_true, y_pred)
    return ops.mean(ops.maximum(1.0 - _hinge_labels(y_true) * y_pred, 0.0), axis=-1)


@loss_function
def squared_hinge(y_true, y_pred):
    y_true, y_pred = _aligned("squared_hinge", y_true, y_pred)
    margin = ops.maximum(1.0 - _hinge_labels(y_true) * y_pred, 0.0)
    return ops.mean(ops.square(margin), axis=-1)


@loss_function
def categorical_hinge(y_true, y_pred):
    """``max(max((1 - y_true) * y_pred) - sum(y_true * y_pred) + 1, 0)``, one-hot labels."""
    y_true, y_pred = _aligned("categorical_hinge", y_true, y_pred)
    positive = ops.sum(y_true * y_pred, axis=-1)
    negative = ops.max((1.0 - y_true) * y_pred, axis=-1)
    return ops.maximum(negative - positive + 1.0, 0.0)


# ---- probabilities ---------------------------------------------------------------------------
@loss_function
def kl_divergence(y_true, y_pred):
    """``sum(y_true * log(y_true / y_pred))`` over the last axis, both clipped to [eps, 1]."""
    y_true, y_pred = _aligned("kl_divergence", y_true, y_pred)
    t, p = _clip(y_true, EPSILON, 1.0), _clip(y_pred, EPSILON, 1.0)
    return ops.sum(t * ops.log(t / p), axis=-1)


@loss_function
def poisson(y_true, y_pred):
    """``mean(y_pred - y_true * log(y_pred + eps))``."""
    y_true, y_pred = _aligned("poisson", y_true, y_pred)
    return ops.mean(y_pred - y_true * ops.log(y_pred + EPSILON), axis=-1)


@loss_function
def binary_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """Binary cross-entropy per element, averaged over ``axis``; labels smoothed towards 0.5."""
    y_true, y_pred = _aligned("binary_crossentropy", y_true, y_pred, broadcast=False)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    logits = _logits(y_pred, from_logits)
    if logits is not None:
        # max(x, 0) - x*z + log(1 + exp(-|x|)): never overflows
        values = ops.maximum(logits, 0.0) - logits * y_true + \
            ops.log(1.0 + ops.exp(-ops.abs(logits)))
    else:
        p = _clip(y_pred)
        values = -(y_true * ops.log(p) + (1.0 - y_true) * ops.log(1.0 - p))
    return ops.mean(values, axis=axis)


@loss_function
def categorical_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """Cross-entropy against one-hot (or soft) labels; with ``label_smoothing`` s the labels
    become ``y * (1 - s) + s / classes`` (Szegedy et al. 2016)."""
    y_true, y_pred = _aligned("categorical_crossentropy", y_true, y_pred, broadcast=False)
    logits = _logits(y_pred, from_logits, axis)
    y_true, y_pred = _to_last(y_true, axis), _to_last(y_pred, axis)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + label_smoothing / y_pred.shape[-1]
    if logits is not None:
        return ops.softmax_cross_entropy(_to_last(logits, axis), y_true)
    probs = _clip(y_pred / ops.sum(y_pred, axis=-1, keepdims=True))
    return -ops.sum(y_true * ops.log(probs), axis=-1)


@loss_function
def binary_focal_crossentropy(y_true, y_pred, apply_class_balancing=False, alpha=0.25,
                              gamma=2.0, from_logits=False, label_smoothing=0.0, axis=-1):
    """Binary cross-entropy scaled by ``(1 - p_t)^gamma`` so easy examples count less (Lin et
    al. 2017, https://arxiv.org/abs/1708.02002); with ``apply_class_balancing`` class 1 weighs
    ``alpha`` and class 0 ``1 - alpha``."""
    y_true, y_pred = _aligned("binary_focal_crossentropy", y_true, y_pred, broadcast=False)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    p = _clip(ops.sigmoid(y_pred) if from_logits else y_pred)
    bce = -(y_true * ops.log(p) + (1.0 - y_true) * ops.log(1.0 - p))
    p_t = y_true * p + (1.0 - y_true) * (1.0 - p)
    focal = ops.power(1.0 - p_t, float(gamma)) * bce
    if apply_class_balancing:
        focal = (y_true * alpha + (1.0 - y_true) * (1.0 - alpha)) * focal
    return ops.mean(focal, axis=axis)


@loss_function
def categorical_focal_crossentropy(y_true, y_pred, alpha=0.25, gamma=2.0, from_logits=False,
                                   label_smoothing=0.0, axis=-1):
    """Categorical cross-entropy with each class's term scaled by ``alpha * (1 - p)^gamma``
    (Lin et al. 2017), for one-hot labels."""
    y_true, y_pred = _aligned("categorical_focal_crossentropy", y_true, y_pred, broadcast=False)
    y_true, y_pred = _to_last(y_true, axis), _to_last(y_pred, axis)
    if from_logits:
        y_pred = ops.softmax(y_pred)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + label_smoothing / y_pred.shape[-1]
    p = _clip(y_pred / ops.sum(y_pred, axis=-1, keepdims=True))
    weight = alpha * ops.power(1.0 - p, float(gamma))
    return ops.sum(weight * (-y_true * ops.log(p)), axis=-1)


@loss_function
def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False, ignore_class=None,
                                    axis=-1):
    """Cross-entropy against integer class labels, shaped like the predictions without
    ``axis`` (a trailing axis of size 1 is dropped). Labels equal to ``ignore_class`` give 0."""
    if len(y_true.shape) == len(y_pred.shape) and y_true.shape[-1] == 1:
        y_true = ops.squeeze(y_true, -1)
    expected = tuple(d for i, d in enumerate(y_pred.shape) if i != axis % len(y_pred.shape))
    if len(y_true.shape) != len(expected) or any(
            a is not None and b is not None and a != b for a, b in zip(y_true.shape, expected)):
        raise ValueError(
            f"sparse_categorical_crossentropy: labels of shape {shape_text(y_true.shape)} do not "
            f"fit predictions of shape {shape_text(y_pred.shape)}: expected integer class labels "
            f"of shape {shape_text(expected)} (for one-hot labels use categorical_crossentropy)")
    labels = ops.class_indices(y_true, "sparse_categorical_crossentropy")
    keep = None
    if ignore_class is not None:
        keep = ops.not_equal(labels, int(ignore_class))
        labels = ops.where(keep, labels, 0)
    logits = _logits(y_pred, from_logits, axis)
    y_pred = _to_last(y_pred, axis)
    if logits is not None:
        values = ops.sparse_softmax_cross_entropy(_to_last(logits, axis), labels)
    else:
        onehot = ops.one_hot(labels, y_pred.shape[-1], y_pred.dtype)
        values = -ops.sum(onehot * ops.log(_clip(y_pred)), axis=-1)
    return values if keep is None else values * ops.cast(keep, values.dtype)


# Keras's short names
mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error
mape = MAPE = mean_absolute_percentage_error
msle = MSLE = mean_squared_logarithmic_error
kld = KLD = kullback_leibler_divergence = kl_divergence
logcosh = log_cosh
