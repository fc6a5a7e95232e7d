"""Running a model's own ``train_step``/``test_step``/``predict_step`` in ``fit``, ``evaluate``
and ``predict``.

A model takes this path when it overrides ``train_step``, ``test_step`` or ``compute_loss``
(then both training and evaluation run its steps, the default ones being Keras's generic
bodies in ``step_methods.py``); ``predict`` when it overrides
``predict_step``. Otherwise the faster built-in steps (``steps.py``) are used.

The data reaches the step as ``fit`` yields it (``pack_x_y_sample_weight``), in the structures
the user gave: x as the model's inputs, y and sample weights as given (one array, a list, a
dict). ``CustomStep`` traces the method once per kind of data into a ``TracedStep``;
``StepLogs`` keeps what the step returned for the progress bar, callbacks and History, reading
metric results after each step, and sums metric state over workers under a Strategy.
"""
from __future__ import annotations

import numpy as np

from hiapi.graph import placeholder
from hiapi.layers.layer import _flatten
from hiapi.models import data
from hiapi.models.input_signature import InputSignature
from hiapi.models.step_methods import StepMethods
from hiapi.models.distribution import LOCAL
from hiapi.models.traced_step import TracedStep, as_float, resolve
from hiapi.utils.data_structures import pack_x_y_sample_weight


def overrides(model, method):
    return getattr(type(model), method) is not getattr(StepMethods, method)


def uses_custom_steps(model):
    """Whether training and evaluation run the model's step methods: it brings its own
    training or evaluation step, or its own loss."""
    return any(overrides(model, name) for name in ("train_step", "test_step", "compute_loss"))


def prepare(model, x, y, sample_weight, class_weight, check_finite):
    """``(xs, ys, weights)`` flat lists of arrays; the structures of y and of the sample
    weights are remembered (on the model) to rebuild ``data`` in the traced step."""
    model.learn_inputs(x)
    xs = data.as_list(data.by_name(x, model._input_names(), "x", "input"), "x")
    if not xs:
        raise ValueError("x is required")
    layouts = model.__dict__.setdefault("_data_layouts", {})
    ys = _flat_arrays(y, "y", layouts)
    if class_weight is not None:
        if sample_weight is not None or len(ys) != 1:
            raise ValueError("class_weight needs one y array and no sample_weight")
        sample_weight = data.class_weight_to_sample_weights(class_weight, ys[0], None)
    weights = [w.astype(np.float32) for w in _flat_arrays(sample_weight, "sample_weight",
                                                          layouts)]
    data.num_samples(xs, ys + weights)    # the step reads "sample weights" as it likes
    if check_finite:
        data.check_finite(xs + ys, "training data")
    return xs, ys, weights


def _flat_arrays(value, what, layouts):
    if value is None:
        return []
    layouts.setdefault(what, InputSignature.from_data(value))
    if isinstance(value, dict):
        value = [value[key] for key in sorted(value)]
    return data.as_list(value, what)


class CustomStep:
    """``model.<kind>_step`` compiled for data like ``xs``, ``ys``, ``weights``; called as the
    built-in steps are: the feed arrays, then (training) the optimizer's and the plan's
    per-step values, of which it uses the plan's.

    In one process the step is traced for each concrete batch shape (as Keras's backends
    trace it), so ``ops.shape(x)[0]`` is a number in user code (``ops.ones((batch, 1))``);
    under a Strategy it is traced once with a free batch axis, so that every rank builds the
    same collectives whatever its share of a batch."""

    def __init__(self, model, kind, xs, ys=(), weights=()):
        self.kind, self.model = kind, model
        self.plan = model.distribution if kind == "train" else None
        if hasattr(self.plan, "train_function"):     # pipeline / tensor parallel
            raise NotImplementedError(
                f"Model {model.name!r}: its own train_step (or a compile without a loss) "
                f"cannot run under {type(self.plan).__name__}, which splits the model's "
                f"built-in step across ranks; use a data-parallel hiapi.distribute.Strategy(), "
                f"or the built-in step (compile with a loss, no train_step override)")
        self.free_batch = model.distribution is not LOCAL
        self.counts = (len(xs), len(ys), len(weights))
        self.dtypes = [dtype for _, dtype in model.input_specs()] + \
            [InputSignature.from_data(a).specs[0][1] for a in ys] + ["float32"] * len(weights)
        self.n_plan = len(self.plan.step_inputs()) if self.plan is not None else 0
        self.n_feed = sum(self.counts)
        self.tracker = StepLogs(model)
        self._traces = {}
        self.latest = None        # traced at the first call, for that batch's shapes

    @property
    def _executables(self):
        """The compiled graphs of the step traced last (``memory_report`` reads them)."""
        return self.latest.function._executables if self.latest is not None else {}

    def _traced(self, shapes):
        key = None if self.free_batch else tuple(tuple(s) for s in shapes)
        traced = self._traces.get(key)
        if traced is None:
            holders = [placeholder(((None,) if self.free_batch else tuple(shape[:1])) +
                                   tuple(shape[1:]), dtype, name=f"{self.kind}_input_{i}")
                       for i, (shape, dtype) in enumerate(zip(shapes, self.dtypes))]
            nx, ny, _ = self.counts
            layouts = self.model.__dict__.get("_data_layouts", {})
            x = self.model.structure_inputs(holders[:nx])
            y = layouts["y"].structure(holders[nx:nx + ny]) if ny else None
            w = layouts["sample_weight"].structure(holders[nx + ny:]) \
                if len(holders) > nx + ny else None
            traced = self._traces[key] = TracedStep(
                getattr(self.model, f"{self.kind}_step"), holders,
                [pack_x_y_sample_weight(x, y, w)], name=f"{self.kind}_step", plan=self.plan)
        self.latest = traced
        return traced

    def __call__(self, *arrays):
        plan_values = arrays[len(arrays) - self.n_plan:] if self.n_plan else ()
        feed = arrays[:self.n_feed]
        result = self._traced([np.shape(a) for a in feed]).run(feed, plan_values)
        if self.kind == "predict":
            return [np.asarray(leaf) for leaf in _flatten(result)]
        return result


class StepLogs:
    """The logs of a model's own steps, in the interface ``fit`` reads the compiled targets
    through: ``reset`` (every epoch: resets ``model.metrics``, as Keras), ``record`` (one
    step's returned logs), ``logs`` (metric results read now, nested dicts flattened) and the
    totals that a Strategy sums over workers (the metrics' variables)."""

    def __init__(self, model):
        self.model = model
        self.last = {}

    def reset(self):
        for metric in self.model.metrics:
            metric.reset_state()
        self.last = {}

    def record(self, results, batch_size):
        self.last = results if isinstance(results, dict) else {"loss": results}
        loss = resolve(self.last.get("loss"))      # fit stops on a NaN loss
        return 0.0 if loss is None or np.ndim(loss) != 0 else float(np.asarray(loss))

    def logs(self):
        flat = {}
        _flatten_logs(resolve(self.last), flat)
        return flat

    def _variables(self):
        return [v for metric in self.model.metrics for v in metric.variables]

    def totals_vector(self):
        return np.concatenate([np.ravel(v.numpy()).astype(np.float64)
                               for v in self._variables()] or [np.zeros(0)])

    def totals_layout(self):
        return [list(v.shape) for v in self._variables()]

    def load_totals(self, vector, layout=None):
        position = 0
        for variable in self._variables():
            size = int(np.prod(variable.shape))
            variable.assign(np.asarray(vector[position:position + size]).reshape(variable.shape))
            position += size


def _flatten_logs(logs, out):
    for key, value in logs.items():
        if isinstance(value, dict):
            _flatten_logs(value, out)
        else:
            out[key] = as_float(value)
