"""Keras's mask propagation: which time steps of a sequence are padding.

A mask is a boolean Var of shape (batch, steps) attached to a layer's output Var as
``_keras_mask``. ``Embedding(mask_zero=True)`` and ``Masking`` create one; a layer whose ``call``
takes a ``mask`` argument receives the mask of its input (recurrent layers skip masked steps,
``GlobalAveragePooling1D`` averages over the real ones); a layer that ``supports_masking``
passes on what its ``compute_mask`` returns (by default its input's mask); any other layer
drops the mask with a warning, as Keras does. Losses weight out masked steps of a sequence
output (``mask_loss_weights``).

Masks travel on the Vars rather than through the model's node list, so replaying a functional
or Sequential model (for training, or inside another model) recomputes them unchanged.
"""
import warnings

from hiapi.graph import ops


def get_mask(var):
    return getattr(var, "_keras_mask", None)


def set_output_masks(layer, inputs, outputs, previous_mask, flatten):
    """Attach ``layer.compute_mask(inputs, previous_mask)`` to ``outputs`` (Keras's
    ``_set_mask_metadata``): kept when ``call`` already attached masks itself."""
    flat_outputs = flatten(outputs)
    if all(get_mask(v) is not None for v in flat_outputs):
        return
    if not layer.supports_masking:
        if any(m is not None for m in flatten(previous_mask)):
            warnings.warn(f"Layer {layer.name!r} ({type(layer).__name__}) was passed an input "
                          f"with a mask attached to it, but it does not support masking, so "
                          f"the mask is dropped: later layers will not see it", stacklevel=4)
        return
    masks = layer.compute_mask(inputs, previous_mask)
    if masks is None:
        return
    for var, mask in zip(flat_outputs, flatten(masks)):
        if get_mask(var) is None and mask is not None:
            var._keras_mask = mask


def mask_loss_weights(y_pred, sample_weight, reduction="sum_over_batch_size"):
    """Keras 3's ``apply_mask``: padding steps of a masked output weigh 0; with the default
    mean reduction the real ones weigh ``total / valid``, so the mean over all entries equals
    the mean over the real ones. ``sample_weight`` unchanged when ``y_pred`` has no mask."""
    mask = get_mask(y_pred)
    if mask is None:
        return sample_weight
    dtype = y_pred.dtype
    weight = ops.cast(mask, dtype)
    if reduction == "sum_over_batch_size":
        weight = weight * (ops.size(weight, dtype=dtype) / (ops.sum(weight) + 1e-7))
    if sample_weight is not None:
        sample = ops.cast(sample_weight, dtype)
        while sample.ndim < weight.ndim:
            sample = ops.expand_dims(sample, -1)
        weight = weight * sample
    return weight
