"""``Metric``: Keras's contract for metrics, for built-in and custom metrics alike.

A metric owns state variables (``add_variable``), accumulates batches in
``update_state(y_true, y_pred, sample_weight=None)``, reports ``result()`` and starts over with
``reset_state()``. A custom metric follows Keras's guide, written with ``hiapi.ops`` or numpy;
in ``fit``/``evaluate`` its ``update_state`` gets each batch's labels and predictions as
arrays::

    class CategoricalTruePositives(hiapi.metrics.Metric):
        def __init__(self, name="categorical_true_positives", **kwargs):
            super().__init__(name=name, **kwargs)
            self.true_positives = self.add_variable(shape=(), initializer="zeros", name="ctp")

        def update_state(self, y_true, y_pred, sample_weight=None):
            hits = np.argmax(y_pred, axis=-1) == np.reshape(y_true, -1)
            self.true_positives.assign_add(np.sum(hits))

        def result(self):
            return self.true_positives

Built-in metrics do their per-batch arithmetic inside the compiled step instead: they return a
few additive statistics as graph outputs (``statistics``) that ``merge_statistics`` adds into
the variables, so evaluating them costs no extra pass over the batch on the host.
"""
from __future__ import annotations

import functools

import numpy as np

from hiapi import tree
from hiapi.graph import eager_tape, step_recording
from hiapi.graph.var import Var
from hiapi.hints import DTypeLike
from hiapi.utils.eager import EagerCache, is_symbolic
from hiapi.utils.naming import snake_case

AGGREGATIONS = ("sum",)


class MetricVariable:
    """A metric's state: a host numpy array with Keras's variable methods (``assign``,
    ``assign_add``, ``assign_sub``, ``numpy()``, ``value``) that also works in arithmetic."""

    def __init__(self, shape, initializer, dtype, aggregation, name):
        from hiapi import initializers
        if aggregation not in AGGREGATIONS:
            raise ValueError(
                f"metric variable {name!r}: aggregation must be 'sum' (hiapi sums metric "
                f"variables over distributed workers), got {aggregation!r}")
        self.name, self.aggregation, self.dtype = name, aggregation, np.dtype(dtype)
        shape = tuple(shape)
        self._initial = np.array(initializers.get(initializer)(shape, self.dtype),
                                 dtype=self.dtype).reshape(shape)
        self._value = self._initial.copy()

    @property
    def shape(self):
        return self._value.shape

    @property
    def value(self):
        return self._value

    def numpy(self):
        return self._value.copy()

    def assign(self, value):
        value = np.asarray(value)
        if value.shape != self.shape and value.size != self._value.size:
            raise ValueError(f"metric variable {self.name!r} has shape {self.shape}, cannot "
                             f"assign a value of shape {value.shape}")
        self._value[...] = value.reshape(self.shape).astype(self.dtype, copy=False)
        return self

    def assign_add(self, value):
        try:             # in place: metrics add to their variables at every step
            np.add(self._value, value, out=self._value, casting="unsafe")
        except ValueError:
            return self.assign(self._value + np.asarray(value))
        return self

    def assign_sub(self, value):
        return self.assign_add(-np.asarray(value))

    def reset(self):
        self._value[...] = self._initial

    def __array__(self, dtype=None, copy=None):
        return self._value.astype(dtype) if dtype is not None else self._value.copy()

    def __float__(self):
        return float(self._value)

    def __int__(self):
        return int(self._value)

    def __repr__(self):
        return f"<MetricVariable {self.name!r} shape={self.shape} value={self._value!r}>"


def _arithmetic(name):
    method = getattr(np.ndarray, name)
    return lambda self, other: method(self._value, np.asarray(other))


for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
              "__truediv__", "__rtruediv__", "__pow__", "__rpow__", "__lt__", "__le__",
              "__gt__", "__ge__", "__eq__", "__ne__"):
    setattr(MetricVariable, _name, _arithmetic(_name))
setattr(MetricVariable, "__neg__", lambda self: -self._value)
setattr(MetricVariable, "__hash__", object.__hash__)


def graph_update(update_state):
    """Mark a built-in ``update_state`` that is equivalent to ``statistics`` followed by
    ``merge_statistics``: the compiled step then computes the statistics in the graph. A
    subclass that overrides ``update_state`` gets it called on the host instead."""
    update_state.uses_statistics = True
    return update_state


def _deferred(method, fn):
    """``fn`` (``update_state``, ``reset_state`` or ``result``), which inside a traced custom
    step is recorded and made on the host after each run (``hiapi.graph.step_recording``);
    a built-in metric's per-batch statistics are computed in the step itself."""
    outside = eager_tape.outside(fn)

    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):
        record = step_recording.active()
        if record is None and eager_tape.recording() is not None:
            # in an eager tape's block: host state, updated now with the values (computed
            # for the purpose) of the block's tensors, as TensorFlow's eager metrics are
            values = tree.map_structure(_value_now, (args, kwargs))
            return outside(self, *values[0], **values[1])
        if record is None or (method == "update_state" and
                              not is_symbolic(*args, *kwargs.values())):
            return fn(self, *args, **kwargs)
        if method == "result":
            return step_recording.DeferredResult(self)
        if method == "update_state" and self.uses_statistics:   # a built-in metric's sums
            record.defer(self, "merge_statistics", (self.statistics(*args, **kwargs),), {})
            return None                                         # computed in the step
        record.defer(self, method, args, kwargs)
        return None
    wrapper.defers_in_steps = True
    return wrapper


def _value_now(leaf):
    return np.asarray(leaf) if isinstance(leaf, Var) else leaf


def runs_in_steps(fn):
    """Mark a metric method that is not recorded in a traced step but runs there as it is
    (``CompileMetrics.update_state``, which calls the recorded ones of its metrics)."""
    setattr(fn, "defers_in_steps", True)
    return fn


class Metric:
    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for method in ("update_state", "reset_state", "result"):
            fn = cls.__dict__.get(method)
            if fn is not None and not getattr(fn, "defers_in_steps", False):
                setattr(cls, method, _deferred(method, fn))

    def __init__(self, dtype: DTypeLike | None = None, name: str | None = None) -> None:
        self.name = name or snake_case(type(self).__name__)
        self.dtype = np.dtype(dtype or "float32").name
        self._variables: list[MetricVariable] = []
        self._eager = EagerCache()

    # ---- Keras's API -------------------------------------------------------------------------
    def add_variable(self, shape=(), initializer="zeros", dtype=None, aggregation="sum",
                     name=None):
        variable = MetricVariable(shape, initializer, dtype or self.dtype, aggregation,
                                  name or f"variable_{len(self._variables)}")
        self._variables.append(variable)
        return variable

    def add_weight(self, shape=(), initializer="zeros", dtype=None, name=None,
                   aggregation="sum"):
        """Keras's older name for ``add_variable``."""
        return self.add_variable(shape, initializer, dtype, aggregation, name)

    @property
    def variables(self):
        return list(self._variables)

    def update_state(self, y_true, y_pred, sample_weight=None):
        raise NotImplementedError(f"{type(self).__name__} must define update_state(y_true, "
                                  f"y_pred, sample_weight=None)")

    def result(self):
        raise NotImplementedError(f"{type(self).__name__} must define result()")

    def reset_state(self):
        for variable in self._variables:
            variable.reset()

    def __call__(self, *args, **kwargs):
        """Update with one batch and return the result so far, as Keras's ``metric(...)``."""
        self.update_state(*args, **kwargs)
        return self.result()

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name!r}>"

    # ---- how a compiled step feeds it --------------------------------------------------------
    @property
    def uses_statistics(self):
        return getattr(type(self).update_state, "uses_statistics", False)

    def step_outputs(self, y_true, y_pred, sample_weight=None):
        """Graph outputs this metric needs from each step: its statistics, or the labels,
        predictions (and sample weights) themselves for an ``update_state`` that runs on the
        host."""
        if self.uses_statistics:
            return self.statistics(y_true, y_pred, sample_weight)
        return [y_true, y_pred] + ([] if sample_weight is None else [sample_weight])

    def merge_step_outputs(self, values):
        if self.uses_statistics:
            self.merge_statistics(values)
        else:
            self.update_state(*values[:2], sample_weight=values[2] if len(values) > 2 else None)

    def statistics(self, y_true, y_pred, sample_weight=None):
        """Additive per-batch statistics as Vars (built-in metrics)."""
        raise NotImplementedError

    def merge_statistics(self, values):
        raise NotImplementedError

    def _update_from_statistics(self, y_true, y_pred, sample_weight):
        """``update_state`` on arrays: the statistics graph, compiled once per shape."""
        if is_symbolic(y_true, y_pred, sample_weight):
            raise TypeError(f"{self.name}: update_state takes arrays; inside a compiled model "
                            f"pass the metric to compile(metrics=[...])")
        self.merge_statistics(self._eager.run(self.statistics, [y_true, y_pred, sample_weight]))


for _method in ("update_state", "reset_state", "result"):
    setattr(Metric, _method, _deferred(_method, Metric.__dict__[_method]))


class StatisticsMetric(Metric):
    """A built-in metric whose state is running sums of additive per-batch statistics: a
    subclass writes ``statistics`` (graph ops, one Var per statistic) and
    ``_statistic_variables`` (its variables, in the same order). The compiled step computes the
    statistics in the graph and adds them in; ``update_state`` on arrays runs the same graph."""

    def _statistic_variables(self):
        raise NotImplementedError(f"{type(self).__name__} must define _statistic_variables()")

    def merge_statistics(self, values):
        for variable, value in zip(self._statistic_variables(), values):
            variable.assign_add(value)

    @graph_update
    def update_state(self, y_true, y_pred, sample_weight=None):
        self._update_from_statistics(y_true, y_pred, sample_weight)
