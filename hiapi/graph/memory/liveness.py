"""Liveness over a schedule: which buffer (*storage*) each value lives in, and from which step
to which step every storage must be kept.

A view (reshape, transpose, slice...) lives in its input's storage, so a storage stays alive
until the last reader of any of its views. Values that must survive the run (outputs, update
values) live until the end. In-place execution merges an output into a storage whose last
reader is the op itself.
"""
from collections import namedtuple

Interval = namedtuple("Interval", "start end")


def storage_bases(order):
    """Var -> the Var whose buffer holds its value (itself unless it is a view)."""
    base = {}
    for var in order:
        view_of = var.op.view_of
        base[var] = base[var.inputs[view_of]] if view_of is not None else var
    return base


def last_uses(order, roots):
    """Var -> index of the last step that reads it (len(order) for roots)."""
    last = {var: i for i, var in enumerate(order)}
    for i, var in enumerate(order):
        for inp in var.inputs:
            last[inp] = max(last[inp], i)
    for root in roots:
        last[root] = len(order)
    return last


def storage_intervals(order, roots):
    """(base Var -> Interval of steps during which its storage is live, the bases map)."""
    base, last = storage_bases(order), last_uses(order, roots)
    index = {var: i for i, var in enumerate(order)}
    intervals = {}
    for var in order:
        b = base[var]
        start = index[b]
        end = max(intervals[b].end if b in intervals else start, last[var])
        intervals[b] = Interval(start, end)
    return intervals, base
