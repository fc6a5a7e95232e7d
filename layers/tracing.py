"""State that layers produce while they are traced into a graph: variable updates (batch-norm
moving statistics, dropout step counters) and extra loss terms (regularization).

The trainer opens a collector around the model call that builds a step; layers call
``add_update``/``add_loss`` and whatever they add becomes that step's updates and loss terms.
Outside a collector, adding is a no-op, so tracing for inference never changes state.
"""
from __future__ import annotations

from contextlib import contextmanager


class StateCollector:
    def __init__(self):
        self.updates = []     # (Variable, new value Var)
        self.losses = []      # scalar Vars added to the loss


_collectors: list[StateCollector] = []


@contextmanager
def collect_state():
    collector = StateCollector()
    _collectors.append(collector)
    try:
        yield collector
    finally:
        _collectors.pop()


def add_update(variable, value):
    if _collectors:
        _collectors[-1].updates.append((variable, value))


def add_loss(value):
    if _collectors:
        _collectors[-1].losses.append(value)


def traced_losses():
    """The loss terms the layers added so far in the step being traced (regularization,
    ``add_loss``): what a custom step's ``compute_loss`` adds to the compiled losses."""
    return list(_collectors[-1].losses) if _collectors else []
