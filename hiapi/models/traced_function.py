"""``hiapi.function``: tf.function's analogue. It compiles a Python function of tensors that
uses models, a ``GradientTape``, optimizers and metrics into one step, so a training loop
written from scratch runs compiled, on any backend::

    @hiapi.function
    def train_step(x, y):
        with hiapi.GradientTape() as tape:
            logits = model(x, training=True)
            loss = loss_fn(y, logits)
        grads = tape.gradient(loss, model.trainable_weights)
        optimizer.apply(grads, model.trainable_weights)
        train_acc_metric.update_state(y, logits)
        return loss

    for x_batch, y_batch in batches:
        loss = train_step(x_batch, y_batch)      # a numpy value

The function is traced on the first call for each structure, shape and dtype of its array
arguments (and each value of its other arguments, which are constants of the trace, as
tf.function treats Python values): a new batch shape or dtype traces it again. Tensors it
returns come back as numpy arrays, metric results as their values; metric updates are made
after each call (``TracedStep``).
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from hiapi.graph import placeholder
from hiapi.graph.var import Var, concrete
from hiapi.graph.variable import Variable
from hiapi.models.traced_step import TracedStep, resolve


class CompiledFunction:
    def __init__(self, fn: Callable[..., Any], name: str | None = None):
        self.fn = fn
        self.name = name or getattr(fn, "__name__", "function")
        self._traces: dict[Any, TracedStep] = {}
        functools.update_wrapper(self, fn)

    def __get__(self, instance, owner=None):
        """Decorating a method: ``self`` is a constant of the trace."""
        if instance is None:
            return self
        bound = instance.__dict__.get(f"_hiapi_function_{self.name}")
        if bound is None:
            bound = CompiledFunction(functools.partial(self.fn, instance), self.name)
            instance.__dict__[f"_hiapi_function_{self.name}"] = bound
        return bound

    @property
    def trace_count(self) -> int:
        """How many times the function was traced (once per input signature)."""
        return len(self._traces)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        arrays: list[np.ndarray] = []
        template = _template((args, kwargs), arrays)
        key = (_key(template), tuple((a.shape, a.dtype.str) for a in arrays))
        traced = self._traces.get(key)
        if traced is None:
            holders = [placeholder(a.shape, a.dtype, name=f"{self.name}_arg{i}")
                       for i, a in enumerate(arrays)]
            call_args, call_kwargs = _fill(template, iter(holders))
            traced = TracedStep(lambda: self.fn(*call_args, **call_kwargs), holders, [],
                                name=self.name)
            self._traces[key] = traced
        return resolve(traced.run(arrays))


def function(fn: Callable[..., Any] | None = None, *, jit_compile: bool | None = None,
             reduce_retracing: bool = False, name: str | None = None) -> Any:
    """Compile ``fn`` (used as ``@hiapi.function`` or ``@hiapi.function()``); tf.function's
    ``jit_compile`` and ``reduce_retracing`` are accepted (hiapi always compiles, and
    traces once per signature)."""
    if fn is None:
        return lambda f: CompiledFunction(f, name)
    return CompiledFunction(fn, name)


class _Array:
    """Where an array argument goes in the template."""

    def __init__(self, index):
        self.index = index


def _template(structure, arrays):
    """``structure`` with arrays (numpy, or Variables' values) replaced by ``_Array`` slots."""
    if isinstance(structure, dict):
        return {key: _template(value, arrays) for key, value in structure.items()}
    if isinstance(structure, (list, tuple)):
        items = [_template(item, arrays) for item in structure]
        return items if isinstance(structure, list) else tuple(items)
    structure = concrete(structure)       # a Var holding a value (from an eager tape)
    if isinstance(structure, (np.ndarray, np.generic)) or hasattr(structure, "__array__") and \
            not isinstance(structure, (Variable, Var)):
        arrays.append(np.asarray(structure))
        return _Array(len(arrays) - 1)
    return structure


def _key(template):
    if isinstance(template, dict):
        return ("dict",) + tuple((k, _key(v)) for k, v in sorted(template.items()))
    if isinstance(template, (list, tuple)):
        return (type(template).__name__,) + tuple(_key(v) for v in template)
    if isinstance(template, _Array):
        return ("array", template.index)
    try:
        hash(template)
        return ("value", type(template).__name__, template)
    except TypeError:
        return ("object", id(template))


def _fill(template, holders):
    if isinstance(template, dict):
        return {key: _fill(value, holders) for key, value in template.items()}
    if isinstance(template, (list, tuple)):
        items = [_fill(item, holders) for item in template]
        return items if isinstance(template, list) else tuple(items)
    if isinstance(template, _Array):
        return next(holders)
    return template
