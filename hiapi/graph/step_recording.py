"""What a traced step records besides its graph: the host calls to make after each run, the
extra inputs to feed, and the variable updates user code asked for.

hiapi runs a custom ``train_step`` (or a ``hiapi.function``) by tracing it once into a graph
and compiling that. Some of what the user's Python does cannot be graph ops:

- ``metric.update_state(y, y_pred)`` updates host-side metric state: the call is recorded with
  its symbolic arguments, which become outputs of the step, and made again with their values
  after every run (``defer``); ``metric.result()`` is read after that (``DeferredResult``);
- ``optimizer.apply(grads, variables)`` adds update ops, and the optimizer's per-step inputs
  (learning rate, update number) must be fed at every run (``feed``);
- under a data-parallel strategy, gradients are averaged over workers before they are applied
  (``plan``).

Outside a recording (eager code) none of this happens and the calls run as they are.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable


class DeferredResult:
    """``metric.result()`` asked for while tracing: read after each run of the step."""

    def __init__(self, metric):
        self.metric = metric

    def resolve(self):
        return self.metric.result()

    def __repr__(self):
        return f"<result of metric {self.metric.name!r}, read after each step>"


class StepRecording:
    def __init__(self, plan=None):
        self.plan = plan               # the model's distribution plan (None: one process)
        self.calls: list[tuple[Any, str, tuple, dict]] = []
        self.feeds: dict[int, tuple[list, Callable[[], list]]] = {}
        self.updates: list[tuple[Any, Any]] = []
        self.applied: set[int] = set()

    def defer(self, owner, method, args, kwargs):
        self.calls.append((owner, method, args, kwargs))

    def feed(self, key, placeholders, values):
        """Feed ``placeholders`` with ``values()`` at every run (once per ``key``)."""
        self.feeds.setdefault(id(key), (list(placeholders), values))

    def add_updates(self, owner, updates):
        if id(owner) in self.applied:
            raise RuntimeError(f"{getattr(owner, 'name', owner)}: apply() was called twice in "
                               f"one traced step; hiapi compiles the step and applies each "
                               f"optimizer's update once per run (apply one list of "
                               f"gradients, or use a second optimizer)")
        self.applied.add(id(owner))
        self.updates += updates


_active: list[StepRecording] = []


@contextmanager
def recording(plan=None):
    record = StepRecording(plan)
    _active.append(record)
    try:
        yield record
    finally:
        _active.pop()


def active() -> StepRecording | None:
    return _active[-1] if _active else None
