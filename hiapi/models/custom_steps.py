"""Running a model's own ``train_step``/``test_step``/``predict_step`` in ``fit``, ``evaluate``
and ``predict``.

A model takes this path when it overrides ``train_step`` or ``test_step`` (then both training
and evaluation run its steps, the default ones being Keras's generic bodies in
``step_methods.py``), or when it was compiled without a loss; ``predict`` when it overrides
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
from hiapi.models.steps import input_placeholders
from hiapi.models.traced_step import TracedStep, as_float, resolve
from hiapi.utils.data_structures import pack_x_y_sample_weight


def overrides(model, method):
    return getattr(type(model), method) is not getattr(StepMethods, method)


def uses_custom_steps(model):
    """Whether training and evaluation run the model's step methods."""
    return overrides(model, "train_step") or overrides(model, "test_step") or (
        getattr(model, "compiled", False) and getattr(model, "_loss_ids", None) is None)


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
    n = data.num_samples(xs, ys + weights)
    if weights:
        data.check_sample_weights(weights, n)
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
    per-step values, of which it uses the plan's."""

    def __init__(self, model, kind, xs, ys=(), weights=()):
        self.kind, self.model = kind, model
        layouts = model.__dict__.get("_data_layouts", {})
        x_holders = input_placeholders(model, xs)
        y_holders = _holders(ys, "target")
        w_holders = [placeholder((None,) + a.shape[1:], "float32", name=f"sample_weight_{i}")
                     for i, a in enumerate(weights)]
        x = model.structure_inputs(x_holders)
        y = layouts["y"].structure(y_holders) if ys else None
        w = layouts["sample_weight"].structure(w_holders) if weights else None
        self.plan = model.distribution if kind == "train" else None
        if hasattr(self.plan, "train_function"):     # pipeline / tensor parallel
            raise NotImplementedError(
                f"Model {model.name!r}: its own train_step (or a compile without a loss) "
                f"cannot run under {type(self.plan).__name__}, which splits the model's "
                f"built-in step across ranks; use a data-parallel hiapi.distribute.Strategy(), "
                f"or the built-in step (compile with a loss, no train_step override)")
        self.n_plan = len(self.plan.step_inputs()) if self.plan is not None else 0
        self.traced = TracedStep(getattr(model, f"{kind}_step"),
                                 x_holders + y_holders + w_holders,
                                 [pack_x_y_sample_weight(x, y, w)], name=f"{kind}_step",
                                 plan=self.plan)
        self.n_feed = len(x_holders) + len(y_holders) + len(w_holders)
        self.tracker = StepLogs(model)
        self._executables = self.traced.function._executables     # memory_report reads it

    def __call__(self, *arrays):
        plan_values = arrays[len(arrays) - self.n_plan:] if self.n_plan else ()
        result = self.traced.run(arrays[:self.n_feed], plan_values)
        if self.kind == "predict":
            return [np.asarray(leaf) for leaf in _flatten(result)]
        return result


def _holders(arrays, name):
    specs = [InputSignature.from_data(a).specs[0] for a in arrays]
    return [placeholder(shape, dtype, name=f"{name}_{i}") for i, (shape, dtype) in
            enumerate(specs)]


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
