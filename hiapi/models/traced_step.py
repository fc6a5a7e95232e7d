"""``TracedStep``: a Python function of tensors traced once into a compiled step.

This is how hiapi runs user code that Keras runs eagerly or under ``tf.function``: a custom
``train_step``/``test_step``/``predict_step`` and a ``hiapi.function``. The function is called
once on placeholders; every op it builds goes into one graph, its ``GradientTape`` gradients
are graph ops too, ``optimizer.apply`` adds the update ops, and layers add theirs (batch-norm
statistics, random-number counters). What must happen on the host is recorded and replayed
after each run (``hiapi.graph.step_recording``): metric updates get the values of their
symbolic arguments, and ``metric.result()`` is read afterwards.

The compiled step's variable updates are applied after every op of the run has succeeded,
so a step that fails leaves the variables as they were.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from hiapi.backends import get_backend
from hiapi.graph import Function, Var, step_recording
from hiapi.graph.step_recording import DeferredResult
from hiapi.graph.variable import Variable
from hiapi.layers.layer import _flatten
from hiapi.layers.layer_io import not_a_node
from hiapi.graph.tracing import collect_state


class TracedStep:
    def __init__(self, fn, placeholders, arguments, name, plan=None):
        """Trace ``fn(*arguments)``, whose leaves are ``placeholders`` (the step's fed
        inputs, in feed order). ``plan``: the model's distribution plan, whose per-step inputs
        (the worker's share of the batch) come last at each call."""
        self.name = name
        with collect_state() as state, step_recording.recording(plan) as record, not_a_node():
            self.result = fn(*arguments)
        self.calls = record.calls
        outputs = _vars_in([self.result] + [(args, kwargs) for _, _, args, kwargs in
                                             self.calls])
        self.feeds = list(record.feeds.values())
        extra = [p for holders, _ in self.feeds for p in holders]
        updates = _checked(state.updates + record.updates, name)
        self.outputs = outputs
        self.function = Function(list(placeholders) + extra, outputs, updates, name=name,
                                 tuned=True)       # threads for the load, as built-in steps

    def run(self, arrays, plan_values=()):
        """Run on ``arrays`` (one per placeholder); returns the function's result with
        arrays for tensors, after the recorded host calls (metric updates) were made."""
        extra = []
        for _, values in self.feeds:
            extra += list(plan_values) if values is None else list(values())
        results = self.function(*arrays, *extra)
        backend = get_backend()
        values = {id(var): backend.to_numpy(value) for var, value in zip(self.outputs, results)}
        substitute = lambda leaf: values[id(leaf)] if isinstance(leaf, Var) else leaf
        for owner, method, args, kwargs in self.calls:
            getattr(owner, method)(*_map(substitute, list(args)),
                                   **_map(substitute, dict(kwargs)))
        return _map(substitute, self.result)


def resolve(structure: Any) -> Any:
    """Metric results asked for in the step (``DeferredResult``), read now."""
    return _map(lambda leaf: leaf.resolve() if isinstance(leaf, DeferredResult) else leaf,
                structure)


def _checked(updates, name):
    seen = {}
    for variable, value in updates:
        if id(variable) in seen:
            raise ValueError(f"{name}: variable {variable.name!r} is updated twice in one "
                             f"step (by two optimizers, or an optimizer and a layer); each "
                             f"variable can be assigned once per step")
        seen[id(variable)] = value
    return updates


def _vars_in(structure):
    found, seen = [], set()
    for leaf in _flatten(structure):
        if isinstance(leaf, Variable):
            leaf = leaf.read
        if isinstance(leaf, Var) and id(leaf) not in seen:
            seen.add(id(leaf))
            found.append(leaf)
    return found


def _map(fn, structure):
    if isinstance(structure, dict):
        return {key: _map(fn, item) for key, item in structure.items()}
    if isinstance(structure, (list, tuple)):
        items = [_map(fn, item) for item in structure]
        return items if isinstance(structure, list) else tuple(items)
    if isinstance(structure, Variable):
        return fn(structure.read)
    return fn(structure)


def as_float(value):
    """A logged value as Python float(s)."""
    array = np.asarray(value, dtype=np.float64)
    return float(array) if array.ndim == 0 else array.tolist()
