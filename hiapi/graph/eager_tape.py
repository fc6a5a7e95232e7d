"""A ``GradientTape`` used eagerly: Keras's training loop from scratch, without a decorator.

TensorFlow's tape records each op as it runs. hiapi differentiates graphs, so under a tape
opened outside any traced step the block is traced instead (an ``EagerSession``): a layer
called on arrays gets placeholders that hold those arrays (``Var._value``), ops build graph
nodes, and the layers' state updates (batch-norm statistics, dropout's seed) are collected
as in a traced step. Nothing runs until a value is needed::

    with hiapi.GradientTape() as tape:
        logits = model(x_batch, training=True)
        loss_value = loss_fn(y_batch, logits)
    grads = tape.gradient(loss_value, model.trainable_weights)   # numpy arrays
    optimizer.apply(grads, model.trainable_weights)
    train_acc_metric.update_state(y_batch, logits)               # logits has its value
    print(float(loss_value))

- ``tape.gradient`` compiles the forward pass and the gradients into one function, runs it
  on the arrays, applies the layers' updates once, and gives values to what the user's code
  can hold: every tensor made outside a layer's ``call`` and every outermost layer call's
  outputs (``loss_value``, ``logits``). A persistent tape's later gradients run with the
  updated state put back as it was before the first, so dropout draws the same mask.
- Reading a value earlier (``float(loss_value)``, ``print``, an ``if`` on a tensor inside
  the block) runs what it needs (``evaluate``), without the updates.
- ``fit``/``evaluate``/``predict`` and metric updates called in the block run outside it
  (``outside``): their steps and host numbers are not the block's, and a metric takes the
  values of the block's tensors.

Every call traces the Python again, but the compiled function is cached by the graph's
structure (``_signature``: ops, shapes, dtypes, which Variables, constants' values), so a loop
compiles once per batch shape, as ``hiapi.function`` traces once per signature. The trace
is what the eager loop pays over ``@hiapi.function``: about 2 ms a step for a small MLP
(784-64-64-10, batch 32: 3.0 ms against 1.0 on numba, on a 2-core VM).

What a tape holds is computed from the Variables as they are when it runs: a value of a
tape's block read only after ``optimizer.apply`` changed the weights, and not one the
gradient run gave a value (a tensor made inside a layer's ``call``), would read the new
weights. ``tape.gradient`` gives values to everything user code usually reads.
"""
from __future__ import annotations

import functools
import weakref
from collections import OrderedDict
from typing import Any, Callable, TypeVar, cast

import numpy as np

from hiapi.backends import get_backend
from hiapi.graph import tracing, var as var_module
from hiapi.graph.ops.sources import Placeholder, Read, placeholder
from hiapi.graph.passes.rewrite import rewrite, with_inputs
from hiapi.graph.schedule import topological_order
from hiapi.graph.var import Var

# compiled functions kept (a graph structure and batch shape each; each holds its Variables)
CACHE_SIZE = 32
_compiled: OrderedDict = OrderedDict()
_recording: list[EagerSession] = []


class EagerSession:
    """What one eager tape's block traced: its input arrays, the Vars made, the layers'
    updates and losses; and, once a gradient ran, the state it updated as it was before."""

    def __init__(self):
        self.inputs: dict[int, tuple[object, Var]] = {}   # id(array) -> (array, placeholder)
        self.made = weakref.WeakSet()     # every Var traced in the block
        self.kept: list[Var] = []         # those user code can hold (see the module)
        self.collector = None             # the layers' updates and losses (a StateCollector)
        self.before: list | None = None   # [(Variable, value)] once the updates ran

    def start(self):
        """Record from now on (again, after ``stop``: the same collector goes on)."""
        if self.collector is None:
            self.collector = tracing.StateCollector()
        tracing._collectors.append(self.collector)
        var_module._watchers.append(self)
        tracing._array_inputs.append(self.input)
        _recording.append(self)

    def stop(self):
        if _recording and _recording[-1] is self:
            _recording.pop()
            tracing._array_inputs.pop()
            var_module._watchers.remove(self)
            tracing._collectors.remove(self.collector)

    def append(self, var):
        """Told of each Var made while recording (``var._watchers``); not of those the
        tape's own compiling and running make (copies, the passes' rewrites)."""
        if _quiet[0]:
            return
        self.made.add(var)
        if not tracing.in_layer_call():
            self.kept.append(var)

    def keep(self, values):
        """A layer call's outputs: values user code holds (``logits = model(x)``)."""
        self.kept.extend(v for v in values if isinstance(v, Var))

    def input(self, array, dtype=None):
        """The placeholder holding ``array`` (one per array object, so ``tape.watch(x)``
        and a later ``model(x)`` mean the same input)."""
        found = self.inputs.get(id(array))
        if found is not None and found[0] is array:
            return found[1]
        value = np.asarray(array) if dtype is None else np.asarray(array, dtype)
        holder = placeholder(value.shape, value.dtype)
        holder._value = value
        self.inputs[id(array)] = (array, holder)    # the array kept: its id stays its own
        return holder

    def gradient(self, totals, points, stop):
        """Values of ``d total / d points`` for each of ``totals`` (a list per total, None
        where unconnected), computed with the block's forward pass in one compiled run;
        gives values to the totals and the kept Vars, and applies the layers' updates on the
        first run."""
        with _Quiet():
            return self._gradient(list(totals), list(points), stop)

    def _gradient(self, totals, points, stop):
        from hiapi.graph.autodiff import grad
        first = self.before is None
        updates = list(self.collector.updates) if first else []
        kept = [v for v in dict.fromkeys(self.kept) if v._value is None and v not in totals]
        values = [value for _, value in updates]
        # one walk of the graph serves the three questions below, where nothing is dropped
        # or cut (the usual step: a walk was 0.15 ms of the MLP's 3.4 ms eager step)
        order = topological_order(totals + kept + points + values)
        computable = _computable(kept, order)
        if len(computable) < len(kept):
            kept, order = computable, None
        roots, order = _cut(totals + kept + points + values, self.made, order)
        parts = iter(roots)
        totals, kept, points = ([next(parts) for _ in group] for group in (totals, kept, points))
        updates = [(variable, next(parts)) for variable, _ in updates]
        key, feeds = _signature(roots, updates, stop, order)
        entry = _compiled.get(key)
        if entry is None:
            # compiled on a copy, so the Vars user code holds can let their graph go
            copy = _clone(roots)
            stopped = {copy[v] for v in stop if v in copy}
            grads = [grad(copy[total], [copy[p] for p in points], stop=stopped)
                     for total in totals]
            connected = [[g is not None for g in row] for row in grads]
            outputs = [g for row in grads for g in row if g is not None] + \
                [copy[v] for v in totals + kept]
            entry = (_function([copy[f] for f in feeds], outputs,
                               [(variable, copy[value]) for variable, value in updates]),
                     connected)
            _remember(key, entry)
        else:
            _compiled.move_to_end(key)
        function, connected = entry
        if first:
            self.before = [(v, v.numpy()) for v, _ in self.collector.updates]
            results = function(*[f._value for f in feeds])
        else:
            with _state_as_before(self.before):
                results = function(*[f._value for f in feeds])
        to_numpy = get_backend().to_numpy
        count = sum(map(sum, connected))
        for var, value in zip(totals + kept, results[count:]):
            if var._value is None:          # a value read earlier stays what was read
                var._value = to_numpy(value)
        values = iter(to_numpy(value) for value in results[:count])
        return [[next(values) if c else None for c in row] for row in connected]

    def release(self):
        """Done: the kept Vars become values without history, and what the block held goes."""
        release(self.kept)
        self.inputs, self.kept, self.collector, self.before = {}, [], None, None
        self.made = weakref.WeakSet()


Method = TypeVar("Method", bound=Callable[..., Any])


def outside(method: Method) -> Method:
    """``method`` (``fit``, ``evaluate``, ``predict``...) runs as outside any eager tape's
    block when called inside one: its own steps and host computations are not the block's
    (in TensorFlow, calling them under a tape records nothing the tape needs)."""
    @functools.wraps(method)
    def run(*args, **kwargs):
        if not _recording:
            return method(*args, **kwargs)
        sessions = list(_recording)
        for session in reversed(sessions):
            session.stop()
        try:
            return method(*args, **kwargs)
        finally:
            for session in sessions:
                session.start()
    return cast(Method, run)       # the signature stays fit's own (type hints, mypy)


def recording() -> EagerSession | None:
    """The eager tape's session recording now, if any."""
    return _recording[-1] if _recording else None


def evaluate(roots):
    """Give ``roots`` their values: run the graph they need on the arrays its placeholders
    hold and the Variables' values now, without any update."""
    with _Quiet():
        _evaluate(roots)


var_module.evaluate = evaluate      # what reading a Var's value runs (var.py cannot import us)


def _evaluate(roots):
    cut, order = _cut(list(roots), (), None)
    key, feeds = _signature(cut, [], (), order)
    for feed in feeds:
        if feed._value is None:
            raise TypeError(f"{roots[0]!r} is symbolic: it depends on an input that holds no "
                            f"data (a placeholder or a keras.Input), so it has no value here. "
                            f"Values come from running the graph: call the model on arrays, "
                            f"use predict(), or return the tensor from a traced step")
    entry = _compiled.get(key)
    if entry is None:
        copy = _clone(cut)
        entry = (_function([copy[f] for f in feeds], [copy[r] for r in cut], []), None)
        _remember(key, entry)
    results = entry[0](*[f._value for f in feeds])
    for var, value in zip(roots, results):
        var._value = get_backend().to_numpy(value)


def _computable(values, order):
    """Those of ``values`` whose graph (within ``order``, a topological order holding it)
    has no placeholder without data: a Var the block made by tracing for another purpose (a
    layer's output shape, say) is not the block's."""
    missing = {}
    for var in order:
        missing[var] = (isinstance(var.op, Placeholder) and var._value is None) or \
            any(missing[i] for i in var.inputs)
    return [v for v in values if not missing[v]]


def _clone(roots):
    """{Var: its copy} over the graph of ``roots``; a Variable's read is kept (one node
    per Variable, which autodiff and the Function's updates name)."""
    copies = {}
    for var in topological_order(roots):
        copies[var] = var if isinstance(var.op, Read) else \
            Var(var.op, [copies[i] for i in var.inputs], var.shape, var.dtype, var.name)
    return copies


class _Quiet:
    """The tape's own work (cutting, copying, compiling, running) is not the user's block."""

    def __enter__(self):
        _quiet[0] += 1

    def __exit__(self, *exc):
        _quiet[0] -= 1


_quiet = [0]


def release(values):
    """Make each Var of ``values`` that holds a value a leaf holding it, so the graph that
    computed it (the step's batch, every intermediate) can be freed: what TensorFlow's eager
    tensors are, values without history, once their tape is done with them."""
    for var in values:
        if var._value is not None and var.inputs:
            var.op = Placeholder(var.shape, var.dtype)
            var.inputs = ()
            var._keras_history = var._keras_logits = var._keras_mask = None


def _function(feeds, outputs, updates):
    from hiapi.graph.function import Function     # function.py imports the backends
    return Function(feeds, list(outputs), updates, name="gradient_tape")


def _remember(key, entry):
    _compiled[key] = entry
    if len(_compiled) > CACHE_SIZE:
        _compiled.popitem(last=False)


def _cut(roots, keep, order):
    """The graph of ``roots`` with each Var that has a value, other than a placeholder or
    one of ``keep``, replaced by a placeholder holding it: a value computed earlier (an
    earlier step's loss, or read already) enters as data, not as the graph that made it.
    Returns the roots and their topological order (``order``, if given, is theirs now)."""
    def cut_here(var):
        return var._value is not None and not isinstance(var.op, Placeholder) and \
            var not in keep

    def transform(var, inputs):
        if cut_here(var):
            holder = placeholder(var.shape, var.dtype)
            holder._value = var._value
            return holder
        return with_inputs(var, inputs)
    order = order or topological_order(roots)
    if not any(map(cut_here, order)):
        return roots, order
    roots = rewrite(roots, transform)
    return roots, topological_order(roots)


def _signature(roots, updates, stop, order):
    """A key equal for two graphs that compute alike (the same ops on inputs of the same
    shapes, the same Variables, constants of the same value), and the placeholders in the
    order the key numbers them: what a cached function is fed. ``order``: the topological
    order of ``roots``, the updates' values among them."""
    index, parts, feeds = {}, [], []
    for position, var in enumerate(order):
        index[var] = position
        if isinstance(var.op, Placeholder):
            feeds.append(var)
            head = ("feed",)
        else:
            head = var.op.key()
        parts.append((head, var.shape, var.dtype.str, tuple(index[i] for i in var.inputs)))
    key = (get_backend().name, tuple(parts), tuple(index[r] for r in roots),
           tuple((id(variable), index[value]) for variable, value in updates),
           tuple(index[v] for v in order if v in stop))
    return key, feeds


class _state_as_before:
    """The Variables the first run updated, set back to their values from before it while a
    later gradient of a persistent tape runs, then to their values now."""

    def __init__(self, before):
        self.before = before

    def __enter__(self):
        self.now = [(variable, variable.storage) for variable, _ in self.before]
        for variable, value in self.before:
            variable.storage = value          # set now, even inside an outer tape's block

    def __exit__(self, *exc):
        for variable, value in self.now:
            variable.storage = value
