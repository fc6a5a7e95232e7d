"""Which forward values a recomputing step keeps: chosen by bytes and by recomputation cost,
and judged by the memory planner's real arena.

Counting values (a checkpoint every k-th value) treats a bias add like a convolution and a
scalar like an image batch, keeps a convolution's output and its activation side by side, and
gives every segment the same length. Here, instead:

- Only values a gradient op reads are stored for the backward pass; the others (a
  convolution's output before its bias and activation, say) exist only while their segment is
  recomputed.
- A *cheap* value (elementwise, a view, a convolution over a few channels: at most
  ``CHEAP_FLOPS_PER_ELEMENT`` per output element) whose inputs are inputs, weights or kept
  values is never kept: each reader gets its own copy, computed just before it runs.
- Segments are cut by cumulative bytes against an allowance that shrinks by every checkpoint
  already kept: while the backward pass works through segment j, the checkpoints of the
  segments before it are still live, so early segments may be long and late ones short
  (Chen et al. 2016, section 4.1, keep the cost of the live checkpoints plus one segment under
  a budget; here the segments are grown greedily under it).

Each allowance gives a candidate plan; every candidate is scheduled and planned for the real
shapes, kernel scratch included (``scratch.py``: a budget means real bytes), and ``choose``
takes the smallest arena whose recomputation costs at most ``MAX_EXTRA_FORWARD`` of the
forward pass's FLOPs (or, for a byte budget, the least recomputation whose arena fits).

What this costs on the deep CNN of ``benchmarks/sublinear.py`` (16 x Conv2D(64, 3x3) + ReLU):
the bias and ReLU run in place in the convolution's buffer, so each layer leaves one value the
backward pass reads, and every layer costs the same to recompute; keeping a convolution's raw
output instead of its activation would save nothing. The smallest arena holds six such values
at its peak: a layer's output gradient and input gradient, the input its filter gradient
reads, and three more, which the segments share with the checkpoints still live before them
(segments of 6, 4, 3, 2 and 1 layers). That recomputes 10 of the 16 convolutions (the first,
over 3 channels, is cheap and recomputed per reader), 0.67 of a forward pass and 22.5 % of the
step's FLOPs; no plan that recomputes each layer at most once within six values recomputes
fewer.
"""
import math
from dataclasses import dataclass

from hiapi.backends import get_backend
from hiapi.graph.memory import sublinear
from hiapi.graph.memory.backward_order import order_updates
from hiapi.graph.memory.cost import flops
from hiapi.graph.memory.planner import plan_memory
from hiapi.graph.memory.scratch import place_scratch, scratch_requests
from hiapi.graph.op import Spec
from hiapi.graph.ops.sources import Placeholder
from hiapi.graph.schedule import execution_order, topological_order

CHEAP_FLOPS_PER_ELEMENT = 64     # a 3x3 convolution over 3 channels costs 54
GEMMS = ("matmul", "conv2d")
MAX_EXTRA_FORWARD = 0.75         # recomputation of "sublinear": at most 3/4 of a forward pass
ALLOWANCES = 32                  # candidate allowances tried, geometric from one value to all


@dataclass
class Candidate:
    """One recomputation plan: its roots, copies made, planned arena and extra FLOPs."""
    rest: list
    updates: list
    copies: int
    arena_bytes: int
    lower_bound: int
    extra_flops: int
    allowance: float


def choose(forward, rest, updates, fed, budget=None, name="function"):
    """The plan for ``compile(memory="sublinear")`` (``budget`` None) or for a byte budget.
    ``fed``: placeholder Var -> concrete shape."""
    candidates = evaluate(forward, rest, updates, fed)
    chosen = pick(candidates, forward, fed, budget)
    if chosen is None:
        smallest = min(c.arena_bytes for c in candidates)
        raise ValueError(f"Function {name!r}: no recomputation plan fits the memory budget of "
                         f"{budget:,} bytes; the smallest achievable is {smallest:,} bytes")
    return chosen


def pick(candidates, forward, fed, budget=None):
    """Which of ``evaluate``'s candidates ``choose`` takes: without a budget the smallest arena
    within MAX_EXTRA_FORWARD of recomputation, with one the least recomputation that fits
    (None when none does)."""
    if budget is None:
        limit = MAX_EXTRA_FORWARD * _forward_flops(forward, fed)
        affordable = [c for c in candidates if c.extra_flops <= limit] or candidates[:1]
        return min(affordable, key=lambda c: (c.arena_bytes, c.extra_flops))
    fitting = [c for c in candidates if c.arena_bytes <= budget]
    return min(fitting, key=lambda c: (c.extra_flops, c.arena_bytes)) if fitting else None


def evaluate(forward, rest, updates, fed):
    """Candidate plans, from keeping every value (first: no recomputation, only the backward
    order) to the largest allowance, each planned for the shapes in ``fed``; allowances that
    keep the same values are planned once."""
    specs = infer_specs(topological_order(list(forward) + list(rest) +
                                          [v for _, v in updates]), fed)
    values = sublinear.forward_values(forward)
    needed = _needed(forward, list(rest) + [v for _, v in updates])
    nbytes = {v: _nbytes(specs[v]) for v in values}
    cheap = {v: _cheap(v, specs) for v in values}
    stored = [nbytes[v] for v in values if v in needed]
    low, high = max(stored, default=1), max(sum(stored), 1)
    allowances = [low * (high / low) ** (k / (ALLOWANCES - 1)) for k in range(ALLOWANCES)]
    seen = {(frozenset(values), frozenset())}
    candidates = [_plan(forward, rest, updates, fed, set(values), set(), 0)]
    for allowance in allowances:
        keep, per_use = select(values, needed, cheap, nbytes, allowance)
        key = (frozenset(keep), frozenset(per_use))
        if key not in seen:
            seen.add(key)
            candidates.append(_plan(forward, rest, updates, fed, keep, per_use, allowance))
    return candidates


def select(values, needed, cheap, nbytes, allowance):
    """(values kept, values recomputed for each reader) for one allowance in bytes."""
    keep, per_use, kept, segment = set(), set(), 0, 0
    for var in values:
        if getattr(var.op, "stateful", False):     # a collective must not run twice
            keep.add(var)
        elif cheap[var] and all(i.op.is_source or i in keep or i in per_use for i in var.inputs):
            per_use.add(var)
        elif var in needed and var.op.view_of is None:
            if segment + nbytes[var] > allowance - kept:
                keep.add(var)
                kept += nbytes[var]
                segment = 0
            else:
                segment += nbytes[var]
    return keep, per_use


def _cheap(var, specs):
    """Recomputing it costs about what keeping it would save in memory traffic: elementwise
    programs, views, and products over few inputs per output (a first convolution on RGB).
    Ops whose cost is not modelled count as expensive, so they are never recomputed per use."""
    op = var.op
    if op.view_of is not None or op.elementwise or op.name == "fused_elementwise":
        return True
    return op.name in GEMMS and \
        flops(var, specs) <= CHEAP_FLOPS_PER_ELEMENT * max(math.prod(specs[var].shape), 1)


def _plan(forward, rest, updates, fed, keep, per_use, allowance):
    others = list(rest) + [v for _, v in updates]
    roots, copies = sublinear.rewrite(forward, others, keep, per_use)
    new_rest, values = roots[:len(rest)], roots[len(rest):]
    new_updates = order_updates(forward, [(var, value) for (var, _), value in
                                          zip(updates, values)], outputs=new_rest)
    all_roots = list(forward) + new_rest + [v for _, v in new_updates]
    order = execution_order(all_roots)
    specs = infer_specs(order, fed)
    plan = plan_memory(order, specs, all_roots)
    # the kernels' scratch too, as the executable will plan it: a budget is in real bytes
    place_scratch(plan, order, scratch_requests(order, specs, get_backend()))
    extra = sum(flops(v, specs) for v in order if v.recompute)
    return Candidate(new_rest, new_updates, copies, plan.arena_bytes, plan.lower_bound, extra,
                     allowance)


def _needed(forward, others):
    """Forward values that the gradient and update ops read (a view's reader reads its base)."""
    forward_set = set(topological_order(forward))
    needed = set()
    for var in topological_order(others):
        if var not in forward_set:
            needed.update(i for i in var.inputs if i in forward_set)
    for var in reversed(topological_order(forward)):
        if var in needed and var.op.view_of is not None:
            needed.add(var.inputs[var.op.view_of])
    return needed


def _forward_flops(forward, fed):
    order = topological_order(forward)
    specs = infer_specs(order, fed)
    return sum(flops(v, specs) for v in order)


def infer_specs(order, fed):
    """Concrete (shape, dtype) of every value in ``order`` for the placeholder shapes in
    ``fed``, as the executor will bind them."""
    specs = {}
    for var in order:
        if isinstance(var.op, Placeholder):
            specs[var] = Spec(tuple(fed[var]), var.op.dtype)
        elif var.op.is_source:
            specs[var] = Spec(*var.op.infer())
        else:
            specs[var] = Spec(*var.op.infer(*(specs[i] for i in var.inputs)))
    return specs


def _nbytes(spec):
    return math.prod(spec.shape) * spec.dtype.itemsize
