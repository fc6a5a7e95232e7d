"""Static memory plan: every intermediate value gets an offset in one arena, allocated once.

Why an arena with offsets rather than size-class pools: the shapes are known at compile time,
so the whole problem is an offline interval-packing problem, and offsets let a large freed
block hold several smaller later tensors (pools keyed by size cannot), which is what keeps the
plan near the lower bound. Placement is "greedy by size" (largest first, each at the best-
fitting gap among the tensors whose lifetimes overlap it), as in TensorFlow Lite's planner.

In place: an op that allows it (``Op.inplace``, on the inputs ``Op.inplace_inputs`` names where
set) writes into the storage of an input of the same shape and dtype whose last reader it is.
Inputs, constants and Variables are not in the arena.
"""
from dataclasses import dataclass, field

import numpy as np

from hiapi.graph.memory.liveness import Interval, storage_intervals

ALIGNMENT = 64


@dataclass
class MemoryPlan:
    offsets: dict            # storage base Var -> byte offset in the arena
    nbytes: dict             # storage base Var -> bytes
    shares: dict             # Var computed in place -> the storage base it writes into
    arena_bytes: int
    lower_bound: int         # peak of simultaneously live bytes
    upper_bound: int         # every value in its own buffer
    intervals: dict = field(repr=False, default_factory=dict)
    # kernel scratch (``memory/scratch.py``): Var -> offset of its step's workspace; the arena
    # before scratch was placed; what scratch added to it; the largest single request
    scratch: dict = field(repr=False, default_factory=dict)
    activation_bytes: int = 0
    scratch_bytes: int = 0
    largest_scratch: int = 0


def _aligned(n):
    return -(-n // ALIGNMENT) * ALIGNMENT


def plan_memory(order, specs, roots, in_place=True):
    intervals, base = storage_intervals(order, roots)
    arena = [v for v in order if base[v] is v and not v.op.is_source]
    nbytes = {v: _aligned(int(np.prod(specs[v].shape)) * specs[v].dtype.itemsize)
              for v in arena}
    upper = sum(nbytes.values())
    shares = _in_place(order, specs, intervals, base, nbytes) if in_place else {}
    merged = dict(intervals)
    for var, host in shares.items():          # the host storage lives on in the result
        merged[host] = Interval(merged[host].start, max(merged[host].end, merged[var].end))
        del merged[var]
    owners = [v for v in arena if v not in shares]
    offsets, total = _place(owners, nbytes, merged)
    lower = _peak(owners, nbytes, merged)
    return MemoryPlan(offsets, nbytes, shares, total, lower, upper, merged,
                      activation_bytes=total)


def _in_place(order, specs, intervals, base, nbytes):
    shares, host_of = {}, {}
    for i, var in enumerate(order):
        if not getattr(var.op, "inplace", False) or base[var] is not var:
            continue
        for inp in var.inputs:
            host = host_of.get(inp, inp)
            if (_overwrites(var, inp) and inp in nbytes and base[inp] is inp and
                    intervals[inp].end == i and specs[inp].shape == specs[var].shape and
                    specs[inp].dtype == specs[var].dtype and
                    all(base[other] is not inp or other is inp for other in var.inputs)):
                shares[var] = host
                host_of[var] = host
                intervals[host] = Interval(intervals[host].start, intervals[var].end)
                break
    return shares


def _overwrites(var, inp):
    """``var``'s op may write over every input position that reads ``inp``."""
    return all(var.op.may_overwrite(k) for k, other in enumerate(var.inputs) if other is inp)


def _place(owners, nbytes, intervals):
    """Greedy by size: offsets such that tensors alive at the same time never overlap."""
    ordered = sorted(owners, key=lambda v: -nbytes[v])
    starts = np.empty(len(ordered), np.int64)
    ends = np.empty(len(ordered), np.int64)
    lows = np.empty(len(ordered), np.int64)
    highs = np.empty(len(ordered), np.int64)
    offsets, total = {}, 0
    for n, var in enumerate(ordered):
        size, (start, end) = nbytes[var], intervals[var]
        overlap = (starts[:n] <= end) & (ends[:n] >= start)
        offset = _best_gap(lows[:n][overlap], highs[:n][overlap], size)
        offsets[var] = offset
        starts[n], ends[n], lows[n], highs[n] = start, end, offset, offset + size
        total = max(total, offset + size)
    return offsets, total


def _best_gap(lows, highs, size):
    """The lowest-waste offset where [offset, offset+size) misses every [low, high)."""
    if len(lows) == 0:
        return 0
    order = np.argsort(lows, kind="stable")
    lows, highs = lows[order], highs[order]
    reach = np.maximum.accumulate(highs)              # end of the occupied prefix
    gap_starts = np.concatenate(([0], reach))
    gap_ends = np.concatenate((lows, [np.iinfo(np.int64).max]))
    widths = gap_ends - gap_starts
    fits = np.flatnonzero(widths >= size)
    best = fits[np.argmin(widths[fits])]
    return int(gap_starts[best])


def _peak(owners, nbytes, intervals):
    """Largest sum of bytes alive at one step: no plan can use less."""
    if not owners:
        return 0
    events = np.zeros(max(intervals[v].end for v in owners) + 2, np.int64)
    for v in owners:
        events[intervals[v].start] += nbytes[v]
        events[intervals[v].end + 1] -= nbytes[v]
    return int(np.cumsum(events).max())
