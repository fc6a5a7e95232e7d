"""Sublinear memory by recomputation (Chen, Xu, Zhang & Guestrin, "Training Deep Nets with
Sublinear Memory Cost", 2016, https://arxiv.org/abs/1604.06174).

The forward values are split into segments; only the values at segment boundaries (the
checkpoints) are kept for the backward pass. Every other forward value the backward pass reads
is replaced by a copy recomputed from the nearest checkpoints (``Var.recompute``); the scheduler
runs those copies as late as possible, right before the gradient ops that need them, so each
segment's activations exist only while its gradients are computed. With k = sqrt(n) segments
the activations kept fall from O(n) to O(sqrt(n)) for one extra forward pass. Recomputed values
are bit-identical: the same kernels on the same inputs (random ops are counter-based). Which
values to keep is chosen by bytes and recomputation cost in ``checkpoints.py``.
"""
from hiapi.graph.schedule import topological_order
from hiapi.graph.var import Var


def forward_values(forward_roots):
    """Forward values that recomputation could drop, in order: computed (views included)."""
    return [v for v in topological_order(forward_roots) if not v.op.is_source]


def rewrite(forward_roots, other_roots, keep, per_use=()):
    """Keep the forward values in ``keep`` (and the forward roots); the other roots (gradients,
    updates) read recomputed copies of the rest. A value in ``per_use`` (cheap, from kept
    values only) gets a fresh copy for each reader, so it lives only while that reader runs;
    every other dropped value is recomputed once. Returns the new other roots and the number
    of copies."""
    forward_set = set(topological_order(forward_roots))
    keep = set(keep) | set(forward_roots)
    per_use = set(per_use)
    memo = {}

    def recomputed(var, reader):
        if var.op.is_source or var in keep or var not in forward_set:
            return var
        key = (var, reader) if var in per_use else var
        if key not in memo:
            context = reader if var in per_use else var
            copy = Var(var.op, tuple(recomputed(i, context) for i in var.inputs), var.shape,
                       var.dtype, var.name)
            copy.recompute = True
            memo[key] = copy
        return memo[key]

    new = {}
    for var in topological_order(other_roots):
        if var in forward_set:
            new[var] = var
            continue
        inputs = tuple(recomputed(i, var) if i in forward_set else new[i] for i in var.inputs)
        if all(a is b for a, b in zip(inputs, var.inputs)):
            new[var] = var
        else:
            new[var] = Var(var.op, inputs, var.shape, var.dtype, var.name)
    return [new[r] for r in other_roots], len(memo)
