"""Neural-network ops: softmax family (composites), fused cross-entropies, one-hot, gather.

``softmax`` and ``log_softmax`` are composites of primitives, stabilised by subtracting the
(gradient-stopped) maximum. The cross-entropies are fused primitives because their forward is
the numerically delicate part (log of a softmax) while their gradient, ``softmax - labels``, is
simple and is written with ops, so second derivatives still work.
"""
import numpy as np

from hiapi.graph.op_namespace import ops as O
from hiapi.graph.op import Op, as_var, normalize_axes, require_float


def log_softmax(x, axis=-1):
    x = as_var(x)
    m = O.stop_gradient(O.max(x, axis, keepdims=True))
    shifted = x - m
    return shifted - O.log(O.sum(O.exp(shifted), axis, keepdims=True))


def softmax(x, axis=-1):
    x = as_var(x)
    y = O.exp(log_softmax(x, axis))
    if normalize_axes("softmax", axis, x.ndim) == (x.ndim - 1,):
        y._keras_logits = x   # lets a cross-entropy loss use the stable fused form
    return y


class SoftmaxCrossEntropy(Op):
    """``-sum(labels * log_softmax(logits), -1)`` per row; labels are probabilities."""
    name = "softmax_cross_entropy"

    def infer(self, logits, labels):
        require_float(self.name, logits)
        if logits.ndim != labels.ndim or not all(
                a is None or b is None or a == b for a, b in zip(logits.shape, labels.shape)):
            raise ValueError(f"softmax_cross_entropy: labels of shape {labels.shape} must have "
                             f"the shape of the logits {logits.shape}")
        return logits.shape[:-1], logits.dtype

    def grad(self, inputs, y, g):
        logits, labels = inputs
        g = O.expand_dims(g, -1)
        total = O.sum(labels, -1, keepdims=True)
        return [(softmax(logits) * total - labels) * g, -log_softmax(logits) * g]


class SparseSoftmaxCrossEntropy(Op):
    """``-log_softmax(logits)[label]`` per row, for integer class labels."""
    name = "sparse_softmax_cross_entropy"

    def infer(self, logits, labels):
        require_float(self.name, logits)
        if labels.dtype.kind not in "iu":
            raise TypeError(f"sparse_softmax_cross_entropy: labels must be integers, got dtype "
                            f"{labels.dtype.name}")
        if logits.shape[-1] is None:
            raise ValueError("sparse_softmax_cross_entropy: the class axis of the logits must "
                             "have a known size")
        if labels.ndim != logits.ndim - 1 or not all(
                a is None or b is None or a == b for a, b in zip(labels.shape, logits.shape)):
            raise ValueError(f"sparse_softmax_cross_entropy: labels of shape {labels.shape} "
                             f"must have the logits' shape {logits.shape} without its last axis")
        return logits.shape[:-1], logits.dtype

    def grad(self, inputs, y, g):
        logits, labels = inputs
        depth = logits.shape[-1]
        onehot = one_hot(labels, depth, logits.dtype)
        return [(softmax(logits) - onehot) * O.expand_dims(g, -1), None]


class OneHot(Op):
    name = "one_hot"

    def __init__(self, depth, dtype):
        self.depth = int(depth)
        self.dtype = np.dtype(dtype)

    def infer(self, indices):
        if indices.dtype.kind not in "iu":
            raise TypeError(f"one_hot: indices must be integers, got dtype {indices.dtype.name}")
        return indices.shape + (self.depth,), self.dtype

    def grad(self, inputs, y, g):
        return [None]


class IntegralIndices(Op):
    """Float class labels to int64 indices, refusing any that is not a whole number at run
    time (the values are not known when the graph is built); ``where`` names the caller."""
    name = "integral_indices"

    def __init__(self, where="labels"):
        self.where = str(where)

    def infer(self, x):
        require_float(self.where, x)
        return x.shape, np.dtype("int64")

    def grad(self, inputs, y, g):
        return [None]


class Gather(Op):
    """``table[indices]`` along axis 0 (an embedding lookup).

    Every kernel rejects an index outside ``[0, len(table))`` with the same message
    (``backends/kernel_errors.py``): numpy would read a negative index from the end of the
    table and train on it. ``where`` names the caller (e.g. the Embedding layer) in it."""
    name = "gather"

    def __init__(self, where="gather"):
        self.where = str(where)

    def infer(self, table, indices):
        if indices.dtype.kind not in "iu":
            raise TypeError(f"{self.where}: indices must be integers, got dtype "
                            f"{indices.dtype.name}")
        if table.ndim < 1:
            raise ValueError(f"{self.where}: the table must have at least one axis, got a "
                             f"scalar")
        return indices.shape + table.shape[1:], table.dtype

    def grad(self, inputs, y, g):
        table, indices = inputs
        return [scatter_add_like(g, indices, table), None]


class ScatterAdd(Op):
    """Zeros shaped like ``like`` with ``updates`` added at rows ``indices`` (repeats add up)."""
    name = "scatter_add"

    def infer(self, updates, indices, like):
        return like.shape, updates.dtype

    def grad(self, inputs, y, g):
        updates, indices, like = inputs
        return [gather(g, indices), None, None]


def softmax_cross_entropy(logits, labels):
    return SoftmaxCrossEntropy()(as_var(logits), as_var(labels))


def sparse_softmax_cross_entropy(logits, labels):
    labels = as_var(labels)
    if labels.dtype.kind == "f":
        labels = IntegralIndices("sparse_softmax_cross_entropy")(labels)
    return SparseSoftmaxCrossEntropy()(as_var(logits), labels)


def class_indices(labels, where="labels"):
    """``labels`` as int64 class indices: integers cast, floats that hold whole numbers
    (``y.astype("float32")``, common in Keras code) converted, any other float refused at run
    time with its value."""
    labels = as_var(labels)
    if labels.dtype.kind == "f":
        return IntegralIndices(where)(labels)
    return O.cast(labels, "int64")


def one_hot(indices, depth, dtype="float32"):
    indices = as_var(indices)
    if indices.dtype.kind == "f":
        indices = IntegralIndices("one_hot")(indices)
    return OneHot(depth, dtype)(indices)


def gather(table, indices, where="gather"):
    return Gather(where)(as_var(table), as_var(indices))


def scatter_add_like(updates, indices, like):
    return ScatterAdd()(as_var(updates), as_var(indices), as_var(like))
