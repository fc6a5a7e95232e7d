"""The one tool every pass uses: rebuild a graph bottom-up through a per-node transform.

``rewrite(roots, transform)`` visits the nodes the roots need, inputs first; ``transform(var,
inputs)`` gets a node and its already-rewritten inputs and returns the node's replacement (the
node itself when nothing changes). Unchanged subgraphs keep their Vars, so a pass that does
nothing returns the very same graph.
"""
from collections import defaultdict

from hiapi.graph.schedule import topological_order
from hiapi.graph.var import Var


def rewrite(roots, transform):
    new = {}
    for var in topological_order(roots):
        inputs = tuple(new[i] for i in var.inputs)
        new[var] = transform(var, inputs)
    return [new[r] for r in roots]


def with_inputs(var, inputs):
    """``var`` itself if its inputs are unchanged, else a copy of it on the new inputs."""
    if all(a is b for a, b in zip(inputs, var.inputs)):
        return var
    copy = Var(var.op, inputs, var.shape, var.dtype, var.name)
    copy.recompute = var.recompute
    return copy


def order_and_users(roots):
    """The nodes the roots need, inputs first, and each node's readers (a node reading a
    value twice is listed twice): what a pass that matches a pattern by its uses needs."""
    order = topological_order(roots)
    users = defaultdict(list)
    for var in order:
        for i in var.inputs:
            users[i].append(var)
    return order, users


def count_ops(roots):
    """Nodes that run a kernel (sources excluded)."""
    return sum(1 for v in topological_order(roots) if not v.op.is_source)
