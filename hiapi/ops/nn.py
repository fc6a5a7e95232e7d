"""The neural-network part of ``keras.ops`` (``keras.ops.nn``): activations, one-hot, and the
cross-entropies, on symbolic tensors and on arrays alike.

On symbolic tensors the cross-entropies with ``from_logits=False`` use the stable fused form
when the probabilities come straight from a softmax/sigmoid, as the built-in losses do.
"""
import numpy as np

from hiapi import activations
from hiapi.backends.array_kernels import integral_indices
from hiapi.graph import ops as O
from hiapi.ops.core import eager_array, is_symbolic, standardize_dtype
from hiapi.runtime.settings import epsilon


def relu(x):
    return O.relu(x) if is_symbolic(x) else np.maximum(eager_array(x), 0)


def relu6(x):
    return O.clip(x, 0, 6) if is_symbolic(x) else np.clip(eager_array(x), 0, 6)


def sigmoid(x):
    if is_symbolic(x):
        return O.sigmoid(x)
    x = eager_array(x)
    return np.asarray(np.exp(-np.logaddexp(0, -x)), x.dtype)


def softplus(x):
    if is_symbolic(x):
        return activations.softplus(x)
    return np.logaddexp(0, eager_array(x))


def silu(x):
    """``x * sigmoid(x)`` (also called swish)."""
    return x * sigmoid(x) if is_symbolic(x) else eager_array(x) * sigmoid(x)


swish = silu


def elu(x, alpha=1.0):
    if is_symbolic(x):
        return activations.elu(x, alpha)
    x = eager_array(x)
    return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))


def leaky_relu(x, negative_slope=0.2):
    if is_symbolic(x):
        return O.where(x > 0, x, x * negative_slope)
    x = eager_array(x)
    return np.where(x > 0, x, x * negative_slope)


def softmax(x, axis=-1):
    if is_symbolic(x):
        return O.softmax(x, axis)
    x = eager_array(x)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def log_softmax(x, axis=-1):
    if is_symbolic(x):
        return O.log_softmax(x, axis)
    x = eager_array(x)
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


def one_hot(x, num_classes, axis=-1, dtype=None):
    """One-hot vectors of length ``num_classes`` on a new last axis (only ``axis=-1``)."""
    if axis != -1:
        raise ValueError(f"one_hot: only axis=-1 is supported, got axis={axis}")
    dtype = standardize_dtype(dtype)
    if is_symbolic(x):
        return O.one_hot(x, num_classes, dtype)
    x = class_indices(x, "one_hot")
    return (x[..., None] == np.arange(num_classes)).astype(dtype)


def class_indices(x, where="labels"):
    """Integer class labels as int64; floats that hold whole numbers are accepted (Keras casts
    them), others refused with the value (the one check, shared with the graph's kernel)."""
    x = np.asarray(x)
    if x.dtype.kind == "f":
        out = np.empty(x.shape, np.int64)
        integral_indices(out, x, where)
        return out
    if x.dtype.kind not in "iub":
        raise TypeError(f"{where}: class labels must be numbers, got dtype {x.dtype.name}")
    return x.astype(np.int64, copy=False)


def categorical_crossentropy(target, output, from_logits=False, axis=-1):
    """Per-example ``-sum(target * log(p))`` over ``axis`` (the last axis)."""
    _last_axis("categorical_crossentropy", output, axis)
    if is_symbolic(target, output):
        logits = _logits(output, from_logits)
        if logits is not None:
            return O.softmax_cross_entropy(logits, O.cast(target, logits.dtype))
        p = O.clip(output / O.sum(output, -1, keepdims=True), epsilon(), 1 - epsilon())
        return -O.sum(target * O.log(p), -1)
    target, output = np.asarray(target), np.asarray(output)
    log_p = log_softmax(output) if from_logits else \
        np.log(np.clip(output / output.sum(-1, keepdims=True), epsilon(), 1 - epsilon()))
    return -np.sum(target * log_p, -1)


def sparse_categorical_crossentropy(target, output, from_logits=False, axis=-1):
    """``categorical_crossentropy`` with integer class labels instead of one-hot rows."""
    where = "sparse_categorical_crossentropy"
    _last_axis(where, output, axis)
    if is_symbolic(target, output):
        logits = _logits(output, from_logits)
        if logits is not None:
            return O.sparse_softmax_cross_entropy(logits, O.class_indices(target, where))
        return categorical_crossentropy(O.one_hot(O.class_indices(target, where),
                                                  output.shape[-1], output.dtype), output)
    target = class_indices(target, where)
    output = np.asarray(output)
    return categorical_crossentropy(one_hot(target, output.shape[-1], dtype=output.dtype),
                                    output, from_logits)


def binary_crossentropy(target, output, from_logits=False):
    """Elementwise ``-(t log p + (1 - t) log(1 - p))``; from logits in the stable form
    ``max(z, 0) - z t + log(1 + exp(-|z|))``."""
    if is_symbolic(target, output):
        logits = _logits(output, from_logits)
        if logits is not None:
            return O.maximum(logits, 0) - logits * target + \
                O.log(1 + O.exp(-O.abs(logits)))
        p = O.clip(output, epsilon(), 1 - epsilon())
        return -(target * O.log(p) + (1 - target) * O.log(1 - p))
    target, output = np.asarray(target), np.asarray(output)
    if from_logits:
        return np.maximum(output, 0) - output * target + np.log1p(np.exp(-np.abs(output)))
    p = np.clip(output, epsilon(), 1 - epsilon())
    return -(target * np.log(p) + (1 - target) * np.log(1 - p))


def _logits(output, from_logits):
    return output if from_logits else getattr(output, "_keras_logits", None)


def _last_axis(name, output, axis):
    if axis not in (-1, len(np.shape(output)) - 1):
        raise ValueError(f"{name}: only the last axis is supported, got axis={axis}")


from hiapi.ops.math_extra import (  # noqa: E402,F401  (keras.ops.nn has them too)
    gelu, hard_sigmoid, hard_silu, hard_swish, log_sigmoid, moments, normalize, selu, softsign)
from hiapi.ops.nn_conv import average_pool, conv, max_pool  # noqa: E402,F401
