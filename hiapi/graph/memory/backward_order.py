"""The order in which a recomputing step visits its update roots, so that the backward pass
frees each layer's gradients as it goes.

The executor's order is depth-first from the roots. A train step's updates come layer by layer
from the input side, so the first update (the first layer's kernel) pulls the whole chain of
input gradients down to it, and every later kernel gradient still needs its layer's output
gradient: all of them stay live until the end (16 of the 31 activation-sized buffers of a
16-convolution network). Recomputation cannot help while that happens. Visiting the updates
from the shallowest backward (the last layer) to the deepest gives the order a hand-written
backward pass has: each layer's kernel gradient right after its output gradient, which then
dies. An update waits until every other reader of its variable has run, so it can still write
straight into the variable (``Executable._direct_updates``).
"""
from hiapi.graph.ops.sources import Read
from hiapi.graph.schedule import topological_order


def order_updates(forward_roots, updates, outputs=()):
    """``updates`` (``(variable, value)`` pairs) reordered shallowest backward first; updates
    of one variable keep their relative order. ``outputs`` are visited before the updates."""
    if len(updates) < 2:
        return list(updates)
    done = set(topological_order(list(forward_roots) + list(outputs)))
    depth = _backward_depth([v for _, v in updates], done)
    readers = _readers([v for _, v in updates] + list(forward_roots) + list(outputs))
    groups = {}
    for variable, value in updates:
        groups.setdefault(id(variable), []).append((variable, value))
    pending = sorted(groups.values(), key=lambda g: min(depth[v] for _, v in g))
    ordered = []
    while pending:
        k = next((k for k, group in enumerate(pending) if _ready(group, done, readers)), 0)
        chosen = pending.pop(k)
        ordered += chosen
        done |= _new_ancestors([v for _, v in chosen], done)
    return ordered


def _ready(group, done, readers):
    """Every other reader of the group's variable has run, or runs on the update's way."""
    waiting = readers.get(id(group[0][0]), set()) - done
    return not waiting or waiting <= _new_ancestors([v for _, v in group], done)


def _new_ancestors(values, done):
    """The values and everything they need that is not in ``done``."""
    found, stack = set(), [v for v in values if v not in done]
    while stack:
        var = stack.pop()
        if var not in found:
            found.add(var)
            stack.extend(i for i in var.inputs if i not in done and i not in found)
    return found


def _backward_depth(roots, done):
    """Longest chain of ops not yet run (outside ``done``) below each value."""
    depth = {}
    for var in topological_order(roots):
        depth[var] = 0 if var in done or var.op.is_source else \
            1 + max((depth[i] for i in var.inputs), default=0)
    return depth


def _readers(roots):
    """id(Variable) -> the ops that read it (through its Read or a view of it)."""
    readers, memory_of = {}, {}
    for var in topological_order(roots):
        if isinstance(var.op, Read):
            memory_of[var] = id(var.op.variable)
            continue
        view = var.op.view_of
        if view is not None and var.inputs[view] in memory_of:
            memory_of[var] = memory_of[var.inputs[view]]
        for inp in var.inputs:
            if inp in memory_of:
                readers.setdefault(memory_of[inp], set()).add(var)
    return readers

