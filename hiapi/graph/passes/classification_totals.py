"""Classification totals: the two sums a classifier's step reports become one op each, for
backends that ask for it (``Backend.rewrites``: numba).

Why: with ``loss="sparse_categorical_crossentropy"`` and ``metrics=["accuracy"]`` (Keras's most
common ``compile``), every step ends in six small kernels over a (batch, classes) array: the
per-row cross-entropy and its sum, then argmax, compare-and-cast, and their sum (and the mean's
divide). At Keras's default batch of 32 each call costs 1.5-4 us of dispatch around well under
a microsecond of arithmetic: 14 us of a 78 us ``evaluate`` batch of the 784-128-10 MLP, where
torch's whole loop takes 70. One loop over the rows does each sum.

Matched, over all axes of a ``sum`` (no ``keepdims``):

- ``sum(sparse_softmax_cross_entropy(logits, labels))`` -> ``sparse_cross_entropy_total``;
- ``sum(cast*(equal(argmax(scores, -1), labels)))`` (either operand order, any number of
  casts, the labels integers of the argmax's shape) -> ``argmax_hits``. Where ``scores`` is a
  softmax (``exp(s - log(sum(exp(s))))`` with ``s = z - max(z)``, as ``ops.softmax`` builds
  it), the count reads the logits ``z``: a row's largest probability is at its largest logit,
  since ``exp`` and subtracting one value per row keep the order; so the softmax that only the
  accuracy read (a ``softmax`` output whose loss takes its logits) is not computed at all.
  Only values rounded to the same float can tell the two apart, and there either index is as
  right as the other (numpy and numba already round ``exp`` differently); a 16-bit softmax
  rounds often enough to change a count, so it is counted as it is.

Every value replaced must feed only the next node of its pattern, or ops that read nothing of
it but its shape (``size``, the ``like`` of ``broadcast_like``: the mean's count and the loss
gradient's broadcast); those then read the labels, which have the same shape. So a train step
matches too: its backward pass computes its own softmax and never reads the per-row losses.
Runs before ``dense_chain`` and ``fusion`` (which would take the casts).
"""

import numpy as np

from hiapi.graph.op import Op
from hiapi.graph.op_namespace import ops as O
from hiapi.graph.ops.elementwise import Add, Cast, Equal, Exp, Subtract
from hiapi.graph.ops.nn import SparseSoftmaxCrossEntropy
from hiapi.graph.ops.reduce import ArgMax, BroadcastLike, Size, Sum
from hiapi.graph.passes.rewrite import order_and_users, with_inputs


class SparseCrossEntropyTotal(Op):
    """``sum(sparse_softmax_cross_entropy(logits, labels))``: a scalar of the logits' dtype."""
    name = "sparse_cross_entropy_total"

    def infer(self, logits, labels):
        _, dtype = SparseSoftmaxCrossEntropy().infer(logits, labels)    # its checks, its errors
        return (), dtype

    def grad(self, inputs, y, g):
        """The unfused ops' gradient (built where no gradient is taken; kept differentiable
        like every op)."""
        from hiapi.graph.autodiff import grad
        return grad(O.sum(O.sparse_softmax_cross_entropy(*inputs)), list(inputs), g)


class ArgmaxHits(Op):
    """How many rows of ``scores`` have their largest value (the first one, as numpy's argmax:
    a NaN counts as largest) at the integer label: ``sum(cast(equal(argmax(scores, -1),
    labels), dtype))``, a scalar of ``dtype``. Counting has no gradient."""
    name = "argmax_hits"

    def __init__(self, dtype):
        self.dtype = np.dtype(dtype)

    def infer(self, scores, labels):
        if scores.ndim < 1 or labels.dtype.kind not in "iu" or \
                labels.shape != ArgMax(scores.ndim - 1).infer(scores)[0]:
            raise ValueError(f"argmax_hits: scores {scores.shape} take integer labels of their "
                             f"shape without the last axis; got labels {labels.shape} of "
                             f"dtype {labels.dtype.name}")
        return (), self.dtype

    def grad(self, inputs, y, g):
        return [None, None]


def _shape_only(user, var):
    """Whether ``user`` reads nothing of ``var`` but its shape."""
    return isinstance(user.op, Size) or (isinstance(user.op, BroadcastLike) and
                                          user.inputs[0] is not var)


class _Match:
    def __init__(self, users, roots):
        self.users, self.roots = users, roots

    def inner(self, var, consumer):
        """Whether ``var`` may vanish into ``consumer``'s pattern: not an output, read by
        ``consumer`` and otherwise only for its shape."""
        return var not in self.roots and not var.recompute and \
            all(u is consumer or _shape_only(u, var) for u in self.users[var])

    def cross_entropy(self, total):
        """``(logits, labels, absorbed)`` for ``sum(sparse_softmax_cross_entropy(...))``."""
        rows = total.inputs[0]
        if not isinstance(rows.op, SparseSoftmaxCrossEntropy) or not self.inner(rows, total):
            return None
        logits, labels = rows.inputs
        return (logits, labels, [rows]) if labels.shape == rows.shape else None

    def hits(self, total):
        """``(scores, labels, absorbed)`` for ``sum(cast*(equal(argmax(scores, -1), labels)))``."""
        absorbed, node, consumer = [], total.inputs[0], total
        while isinstance(node.op, Cast) and self.inner(node, consumer):
            absorbed.append(node)
            node, consumer = node.inputs[0], node
        if not isinstance(node.op, Equal) or not self.inner(node, consumer):
            return None
        absorbed.append(node)
        for top, labels in (node.inputs, node.inputs[::-1]):
            if isinstance(top.op, ArgMax) and top.op.axis == top.inputs[0].ndim - 1 and \
                    labels.dtype.kind in "iu" and labels.shape == top.shape == node.shape and \
                    top not in self.roots and not top.recompute and self.users[top] == [node]:
                return _order_source(top.inputs[0]), labels, absorbed + [top]
        return None


def _order_source(var):
    """What ``argmax(var, -1)`` equals ``argmax(.., -1)`` of: through ``exp``, casts between
    floats, and adding or subtracting one value per row (a softmax's maximum and log-sum).
    Only through float32 and float64 values: a 16-bit softmax rounds neighbouring
    probabilities to the same value often enough (a mixed_bfloat16 model: one or two rows in
    6,400) that its argmax, which Keras counts, is not the logits' one."""
    while var.dtype in _WIDE:
        op, inputs = var.op, var.inputs
        if isinstance(op, Exp) or (isinstance(op, Cast) and inputs[0].dtype.kind == "f"):
            source = inputs[0]
        elif isinstance(op, (Add, Subtract)) and inputs[0].shape == var.shape and \
                _per_row(inputs[1], var):
            source = inputs[0]
        elif isinstance(op, Add) and inputs[1].shape == var.shape and _per_row(inputs[0], var):
            source = inputs[1]
        else:
            break
        if source.dtype not in _WIDE:
            break
        var = source
    return var


_WIDE = (np.dtype(np.float32), np.dtype(np.float64))


def _per_row(operand, var):
    """Whether ``operand`` is one value per row of ``var`` (shape ``(..., 1)``), or one in all."""
    return var.ndim >= 1 and (operand.shape == var.shape[:-1] + (1,) or
                              all(d == 1 for d in operand.shape))


def _full_sum(var):
    return isinstance(var.op, Sum) and not var.op.keepdims and not var.recompute and \
        var.op.axis == tuple(range(var.inputs[0].ndim))


def run(roots, rewrites=frozenset()):
    if "classification_totals" not in rewrites:
        return roots
    order, users = order_and_users(roots)
    match = _Match(users, set(roots))
    replaced, shape_of = {}, {}    # sum -> (op, scores, labels); vanished value -> its labels
    for var in order:
        if not _full_sum(var):
            continue
        found = match.cross_entropy(var)
        op = SparseCrossEntropyTotal()
        if found is None:
            found, op = match.hits(var), ArgmaxHits(var.dtype)
        if found is not None:
            scores, labels, absorbed = found
            replaced[var] = (op, scores, labels)
            shape_of.update((v, labels) for v in absorbed)
    if not replaced:
        return roots
    new = {}
    for var in order:
        if var in shape_of:
            continue                      # read only for its shape, now through the labels
        if var in replaced:
            op, scores, labels = replaced[var]
            new[var] = op(new[scores], new[labels], name=var.name)
        else:
            new[var] = with_inputs(var, tuple(new[shape_of.get(i, i)] for i in var.inputs))
    return [new[r] for r in roots]
