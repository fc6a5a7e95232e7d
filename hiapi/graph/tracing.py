"""What is being traced right now: the state a step's graph reads and writes while layers are
called on symbolic tensors.

A *collector* gathers a step's variable updates (batch-norm moving statistics, random-number
counters, ``Variable.assign_add`` in a layer's ``call``) and extra loss terms (``add_loss``,
regularization). The trainer opens one around the model call that builds a step; outside a
collector adding is a no-op, so tracing for a model's construction or a shape never changes
state.

Inside a trace a Variable stands for its graph value, and after ``v.assign(x)`` that value is
``x`` (the pending update), so a layer that assigns and then reads sees its new value, as in
Keras; the Variable itself is written after the step, when every reader has run. Where no
update is pending, the value is ``variable.read``, the value from before the step.
"""
from __future__ import annotations

from contextlib import contextmanager


class StateCollector:
    def __init__(self):
        self.updates = []     # (Variable, new value Var), one per Variable, in first-set order
        self.losses = []      # scalar Vars added to the loss
        self._pending = {}    # id(Variable) -> index in updates
        self._regularized = set()    # ids of the Variables whose penalty is in losses

    def set_update(self, variable, value):
        index = self._pending.get(id(variable))
        if index is None:
            self._pending[id(variable)] = len(self.updates)
            self.updates.append((variable, value))
        else:                 # a second assignment in one step: the last one is the update
            self.updates[index] = (variable, value)

    def pending(self, variable):
        index = self._pending.get(id(variable))
        return None if index is None else self.updates[index][1]


_collectors: list[StateCollector] = []
_array_inputs: list = []     # an eager tape's ``input``: arrays in its block are fed, not constants
_symbolic_depth = [0]
_batch_references: list[list] = []


@contextmanager
def collect_state():
    collector = StateCollector()
    _collectors.append(collector)
    try:
        yield collector
    finally:
        _collectors.pop()


@contextmanager
def symbolic_scope():
    """A layer's ``call`` being traced: Variables stand for their graph values, and
    assignments become the step's updates instead of writing the Variable now."""
    _symbolic_depth[0] += 1
    try:
        yield
    finally:
        _symbolic_depth[0] -= 1


def in_trace():
    """True while a layer call or a step is being traced."""
    return bool(_symbolic_depth[0] or _collectors)


def array_input(array):
    """The graph value of an array met while an eager tape traces its block (a placeholder
    holding it, so the block's compiled function is fed each step's batch), or None
    elsewhere: the array is then a constant."""
    return _array_inputs[-1](array) if _array_inputs else None


def eager_tape_recording():
    """True while an eager tape traces its block: every op is recorded, arrays included (as
    TensorFlow's tape records ops on constants it watches)."""
    return bool(_array_inputs)


def in_layer_call():
    return bool(_symbolic_depth[0])


def collecting():
    """True while a step (or a call on arrays) is being built: what is added is kept."""
    return bool(_collectors)


def add_update(variable, value):
    if _collectors:
        _collectors[-1].set_update(variable, value)


def current_value(variable):
    """The graph value of ``variable`` at this point of the trace: its pending update, if it
    was assigned earlier in the step, else its value from before the step."""
    if _collectors:
        value = _collectors[-1].pending(variable)
        if value is not None:
            return value
    return variable.read


def add_loss(value):
    if _collectors:
        _collectors[-1].losses.append(value)


def add_regularization(variable, term_fn):
    """Add ``term_fn()`` to the step's loss once per Variable (a layer called twice in one
    step still penalises its weights once, as Keras does)."""
    if _collectors and id(variable) not in _collectors[-1]._regularized:
        _collectors[-1]._regularized.add(id(variable))
        _collectors[-1].losses.append(term_fn())


@contextmanager
def batch_reference(values):
    """Tensors whose first axis is the batch of the graph being traced (a layer's inputs):
    random numbers asked for with a shape like ``(None, 4)`` take their batch size from
    them."""
    _batch_references.append(list(values))
    try:
        yield
    finally:
        _batch_references.pop()


def batch_source():
    """The innermost tensor with an unknown (batch) first axis, or None."""
    for values in reversed(_batch_references):
        for value in values:
            shape = getattr(value, "shape", ())
            if len(shape) and shape[0] is None:
                return value
    return None


def traced_losses():
    """The loss terms the layers added so far in the step being traced (regularization,
    ``add_loss``): what a custom step's ``compute_loss`` adds to the compiled losses."""
    return list(_collectors[-1].losses) if _collectors else []
