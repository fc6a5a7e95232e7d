"""Sublinear memory by recomputation (Chen, Xu, Zhang & Guestrin, "Training Deep Nets with
Sublinear Memory Cost", 2016, https://arxiv.org/abs/1604.06174).

The forward values are split into segments; only the values at segment boundaries (the
checkpoints) are kept for the backward pass. Every other forward value the backward pass reads
is replaced by a copy recomputed from the nearest checkpoints (``Var.recompute``); the scheduler
runs those copies as late as possible, right before the gradient ops that need them, so each
segment's activations exist only while its gradients are computed. With k = sqrt(n) segments
the activations kept fall from O(n) to O(sqrt(n)) for one extra forward pass. Recomputed values
are bit-identical: the same kernels on the same inputs (random ops are counter-based).
"""
import math

from hiapi.graph.schedule import topological_order
from hiapi.graph.var import Var


def candidates(forward_roots):
    """Forward values that could be checkpoints, in order: computed, not views."""
    return [v for v in topological_order(forward_roots)
            if not v.op.is_source and v.op.view_of is None]


def rewrite(forward_roots, other_roots, every):
    """Checkpoint every ``every``-th forward value; the other roots (gradients, updates) read
    recomputed copies of the rest. Returns the new other roots and the number of copies."""
    forward = candidates(forward_roots)
    forward_set = set(topological_order(forward_roots))
    keep = set(forward[every - 1::every]) | set(forward_roots)
    memo = {}

    def recomputed(var):
        if var.op.is_source or var in keep or var not in forward_set:
            return var
        if var not in memo:
            copy = Var(var.op, tuple(recomputed(i) for i in var.inputs), var.shape, var.dtype,
                       var.name)
            copy.recompute = True
            memo[var] = copy
        return memo[var]

    new = {}
    for var in topological_order(other_roots):
        if var in forward_set:
            new[var] = var
            continue
        inputs = tuple(recomputed(i) if i in forward_set else new[i] for i in var.inputs)
        if all(a is b for a, b in zip(inputs, var.inputs)):
            new[var] = var
        else:
            new[var] = Var(var.op, inputs, var.shape, var.dtype, var.name)
    return [new[r] for r in other_roots], len(memo)


def sqrt_segments(forward_roots):
    """Checkpoint spacing for about sqrt(n) segments of n forward values."""
    return max(1, round(math.sqrt(len(candidates(forward_roots)))))


def spacings(forward_roots):
    """Checkpoint spacings from least recomputation (1: keep everything) to most."""
    n = len(candidates(forward_roots))
    values, every = [], 1
    while every < n:
        values.append(every)
        every = max(every + 1, int(every * 1.5))
    return values + [max(n, 1)]
