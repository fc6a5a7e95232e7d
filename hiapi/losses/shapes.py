"""Keras's shape leniency between labels and predictions, shared by losses and metrics.

Keras aligns the two before every loss and metric (``squeeze_or_expand_to_same_rank``): labels
of shape (batch,) go with predictions of shape (batch, 1) by adding the trailing axis of size 1
(or dropping it from the side that has one more axis). Afterwards the elementwise losses
(squared, absolute, hinge, Poisson...) broadcast as Keras's do, so labels (batch, 10) go with
predictions (batch, 1); the cross-entropies need the same shape, as Keras's backends check.
Shapes that do not fit are a mistake, reported with both shapes.
"""
from hiapi.graph import ops


def _aligned_ranks(rank_true, rank_pred, last_true, last_pred):
    """What to do so both ranks match: "expand_true", "squeeze_true", "expand_pred",
    "squeeze_pred" or None."""
    if rank_true == rank_pred + 1 and last_true == 1:
        return "expand_pred" if rank_pred == 1 else "squeeze_true"
    if rank_pred == rank_true + 1 and last_pred == 1:
        return "expand_true" if rank_true == 1 else "squeeze_pred"
    return None


def _last(shape):
    return shape[-1] if shape else None


def squeeze_or_expand_to_same_rank(x1, x2, expand_rank_1=True):
    """``x1`` and ``x2`` with equal ranks when they differ by a trailing axis of size 1 (as
    Keras's function of the same name). ``_keras_logits`` follows a squeezed prediction."""
    action = _aligned_ranks(len(x1.shape), len(x2.shape), _last(x1.shape), _last(x2.shape))
    if action == "expand_pred" and not expand_rank_1:
        action = "squeeze_true"
    if action == "expand_true" and not expand_rank_1:
        action = "squeeze_pred"
    if action == "expand_true":
        x1 = ops.expand_dims(x1, -1)
    elif action == "squeeze_true":
        x1 = _squeeze_last(x1)
    elif action == "expand_pred":
        x2 = ops.expand_dims(x2, -1)
    elif action == "squeeze_pred":
        x2 = _squeeze_last(x2)
    return x1, x2


def _squeeze_last(x):
    squeezed = ops.squeeze(x, -1)
    logits = getattr(x, "_keras_logits", None)
    if logits is not None:
        squeezed._keras_logits = ops.squeeze(logits, -1)
    return squeezed


def aligned_shapes(true_shape, pred_shape):
    """The shapes ``squeeze_or_expand_to_same_rank`` would give, without building ops."""
    true_shape, pred_shape = tuple(true_shape), tuple(pred_shape)
    action = _aligned_ranks(len(true_shape), len(pred_shape), _last(true_shape),
                            _last(pred_shape))
    if action == "expand_true":
        true_shape += (1,)
    elif action == "squeeze_true":
        true_shape = true_shape[:-1]
    elif action == "expand_pred":
        pred_shape += (1,)
    elif action == "squeeze_pred":
        pred_shape = pred_shape[:-1]
    return true_shape, pred_shape


def shape_text(shape):
    return "(" + ", ".join("None" if d is None else str(d) for d in shape) + \
        ("," if len(shape) == 1 else "") + ")"


def _dims_fit(a, b, broadcast):
    return a is None or b is None or a == b or (broadcast and 1 in (a, b))


def check_same_shape(name, true_shape, pred_shape, broadcast=False):
    """Raise a ValueError naming ``name`` unless the labels fit the predictions once aligned
    (a None dimension fits any size; with ``broadcast``, so does a dimension of size 1)."""
    aligned_true, aligned_pred = aligned_shapes(true_shape, pred_shape)
    fits = len(aligned_true) == len(aligned_pred) and all(
        _dims_fit(a, b, broadcast) for a, b in zip(aligned_true, aligned_pred))
    if not fits:
        rule = "broadcast together" if broadcast else "have the same shape"
        raise ValueError(
            f"{name}: labels of shape {shape_text(true_shape)} do not fit predictions of shape "
            f"{shape_text(pred_shape)}: they must {rule} (up to a trailing axis of size 1, "
            f"added or dropped as in Keras)")
