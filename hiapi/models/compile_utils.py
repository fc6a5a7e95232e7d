"""What ``compile`` asked for, resolved per model output: losses, loss weights and metrics, and
the host-side trackers that turn each step's outputs into the logged values.

Keras's forms are accepted: one loss for every output, or a list or a dict keyed by output
name (``None`` for an output: no loss for it); metrics as a list (applied to every output), a
list of lists, or a dict. With several outputs the logs hold ``loss``, ``<output>_loss`` and
``<output>_<metric>``. Labels are given for every output, or only for those with a loss.
``weighted_metrics`` take the same forms and get the sample weights.
"""
import numpy as np

from hiapi import losses as losses_module
from hiapi import metrics as metrics_module
from hiapi.graph import ops, placeholder
from hiapi.layers import masks
from hiapi.models.step_totals import StepTotals
from hiapi.runtime.settings import floatx


def _per_output(value, names, what, default):
    if value is None:
        return [default] * len(names)
    if isinstance(value, dict):
        unknown = set(value) - set(names)
        if unknown:
            raise ValueError(f"compile: {what} names unknown outputs {sorted(unknown)}; the "
                             f"outputs are {names}")
        return [value.get(name, default) for name in names]
    if isinstance(value, (list, tuple)) and len(names) > 1 and (
            what != "metrics" or all(isinstance(v, (list, tuple)) or v is None for v in value)):
        if len(value) != len(names):
            raise ValueError(f"compile: got {len(value)} {what} for {len(names)} outputs")
        return list(value)
    return [value] * len(names)


def _as_list(metrics):
    if metrics is None:
        return []
    return list(metrics) if isinstance(metrics, (list, tuple)) else [metrics]


class CompiledTargets:
    def __init__(self, loss, loss_weights, metrics, output_names, weighted_metrics=None):
        self.names = list(output_names)
        self.losses = [losses_module.get(l) if l is not None else None
                       for l in _per_output(loss, self.names, "losses", None)]
        self.loss_weights = [float(w) for w in
                             _per_output(loss_weights, self.names, "loss_weights", 1.0)]
        self.metric_ids = [_as_list(m) for m in _per_output(metrics, self.names, "metrics", [])]
        self.weighted_metric_ids = [_as_list(m) for m in _per_output(
            weighted_metrics, self.names, "metrics", [])]
        self.labelled = None         # the outputs the labels belong to, in order
        self.metrics = None          # [(output index, Metric)], resolved against shapes
        self._weighted = set()       # ids of the metrics that receive sample weights
        self._loss_trackers = None
        self._totals = None          # StepTotals: adds each step into the trackers and metrics
        self._metric_sizes = {}      # step output count -> outputs per metric (``build``)

    # ---- labels ------------------------------------------------------------------------------
    def prepare_labels(self, ys):
        """Labels converted for their losses. Keras takes labels for every output or, when
        some outputs have no loss, for just the outputs that have one."""
        with_loss = [i for i, loss in enumerate(self.losses) if loss is not None]
        if len(ys) == len(self.names):
            labelled = list(range(len(self.names)))
        elif len(ys) == len(with_loss):
            labelled = with_loss
        else:
            expected = f"{len(self.names)}" if len(with_loss) == len(self.names) else \
                f"{len(self.names)} (one per output) or {len(with_loss)} (one per output " \
                f"with a loss: {[self.names[i] for i in with_loss]})"
            raise ValueError(f"the model has {len(self.names)} outputs ({self.names}), got "
                             f"{len(ys)} target arrays; expected {expected}")
        if self.labelled and labelled != self.labelled:
            raise ValueError(f"labels were given before for outputs "
                             f"{[self.names[i] for i in self.labelled]}, now for "
                             f"{[self.names[i] for i in labelled]}")
        self.labelled = labelled
        return [self.losses[i].prepare_labels(y) if self.losses[i] is not None else
                np.asarray(y) for i, y in zip(labelled, ys)]

    def placeholders(self, outputs, ys, weighted):
        """Graph inputs for the labels (and sample weights) of one step; each loss checks
        that its labels fit its output."""
        targets, weights = [], []
        if self.labelled is None:     # no labels: the loss comes from add_loss alone
            self.labelled = []
        for j, (i, y) in enumerate(zip(self.labelled, ys)):
            shape, loss = (None,) + tuple(y.shape[1:]), self.losses[i]
            if loss is not None:
                loss.check_labels(shape, outputs[i].shape)
            dtype = loss.label_dtype if loss is not None and loss.label_dtype else \
                outputs[i].dtype
            targets.append(placeholder(shape, dtype, name=f"target_{j}"))
            weights.append(placeholder((None,), "float32", name=f"sample_weight_{j}")
                           if weighted else None)
        return targets, weights

    # ---- the step's graph outputs ------------------------------------------------------------
    def _resolve_metrics(self, targets, outputs):
        """[(output index, Metric)]: ``metrics`` then ``weighted_metrics`` (which get the sample
        weights; named ``weighted_<name>`` when an unweighted one has that name, as Keras)."""
        labels = dict(zip(self.labelled, targets))
        resolved = []
        for weighted, table in ((False, self.metric_ids), (True, self.weighted_metric_ids)):
            for i, ids in enumerate(table):
                if ids and i not in labels:
                    raise ValueError(f"compile: metrics {ids} are given for output "
                                     f"{self.names[i]!r}, but no labels are given for it")
                for identifier in ids:
                    metric = self._resolve(identifier, i, labels[i], outputs[i], resolved,
                                           weighted)
                    resolved.append((i, metric))
                    if weighted:
                        self._weighted.add(id(metric))
        return resolved

    def _resolve(self, identifier, i, label, output, resolved, weighted):
        metric = metrics_module.get(identifier, label.shape, output.shape)
        if len(self.names) > 1 or any(m is metric for _, m in resolved):
            if isinstance(identifier, metrics_module.Metric):   # the user's object stays
                metric = metrics_module.clone(metric)
        prefix = f"{self.names[i]}_" if len(self.names) > 1 else ""
        if weighted and prefix + metric.name in {m.name for _, m in resolved}:
            metric.name = f"weighted_{metric.name}"
        metric.name = prefix + metric.name
        return metric

    def build(self, targets, outputs, weights, extra_losses):
        """Graph outputs of a step: total loss, per-output losses (several outputs only), then
        what each metric needs (its statistics, or labels and predictions)."""
        if self.metrics is None:
            self.metrics = self._resolve_metrics(targets, outputs)
        per_output, total = [], None
        for y, w, i in zip(targets, weights, self.labelled):
            loss, out = self.losses[i], outputs[i]
            if loss is None:
                continue
            # a masked sequence output (Embedding(mask_zero=True), Masking) weighs out padding
            term = loss(y, out, masks.mask_loss_weights(out, w, loss.reduction))
            per_output.append(term)
            weighted = term if self.loss_weights[i] == 1.0 else self.loss_weights[i] * term
            total = weighted if total is None else total + weighted
        for term in extra_losses:            # add_loss terms and regularization
            term = ops.cast(term, floatx()) if term.dtype.kind != "f" else term
            total = term if total is None else total + ops.cast(term, total.dtype)
        if total is None:
            raise ValueError(
                f"No loss to compute: the model's outputs {self.names} have no loss and no "
                f"layer adds one; give compile() a loss, or call self.add_loss(...) in a "
                f"layer's call")
        labels, sample_weights = dict(zip(self.labelled, targets)), dict(zip(self.labelled,
                                                                             weights))
        metric_outputs = [metric.step_outputs(labels[i], outputs[i], sample_weights[i]
                                              if id(metric) in self._weighted else None)
                          for i, metric in self.metrics]
        results = [total] + (per_output if len(self.names) > 1 else []) + \
            [value for values in metric_outputs for value in values]
        # by the step's output count: a weighted step gives a host-side weighted metric one
        # more output (its sample weights) than an unweighted one, and train and validation
        # steps of one fit may differ so (``StepTotals``)
        self._metric_sizes[len(results)] = [len(values) for values in metric_outputs]
        return results

    @property
    def log_names(self):
        losses = [f"{self.names[i]}_loss" for i in self.labelled or []
                  if self.losses[i] is not None] if len(self.names) > 1 else []
        return ["loss"] + losses + [metric.name for _, metric in self.metrics or []]

    # ---- host side: running values over an epoch --------------------------------------------
    def reset(self):
        """Zero the running totals. The trackers, and the plans ``StepTotals`` made of the
        steps' outputs, are made once and kept (reset in place, as Keras resets its
        trackers): ``train_on_batch`` and ``test_on_batch`` reset at every call, and making
        them anew cost 8 us quiet, several times that with the caches cold after a step."""
        n_losses = len(self.log_names) - len(self.metrics or [])
        metrics = [m for _, m in self.metrics or []]
        if self._totals is None or len(self._loss_trackers) != n_losses or \
                any(a is not b for a, b in zip(self._totals.metrics, metrics)) or \
                len(self._totals.metrics) != len(metrics):     # made before the first build
            self._loss_trackers = [metrics_module.Mean() for _ in range(n_losses)]
            self._totals = StepTotals(self._loss_trackers, metrics, self._metric_sizes)
        for tracker in self._loss_trackers:
            tracker.reset_state()
        for _, metric in self.metrics or []:
            metric.reset_state()

    def record(self, results, batch_size):
        """Add one step's outputs; returns the step's total loss."""
        self._totals.record(results, batch_size)
        return float(results[0])

    def _state_variables(self):
        if self._loss_trackers is None:          # nothing recorded since compile
            return []
        return [v for tracker in self._loss_trackers + [m for _, m in self.metrics]
                for v in tracker.variables]

    def totals_vector(self):
        """Every metric variable as one float64 vector (to sum over workers, or to save)."""
        return np.concatenate([np.ravel(v.numpy()).astype(np.float64)
                               for v in self._state_variables()] or [np.zeros(0)])

    def totals_layout(self):
        """The shape of every metric variable, in ``totals_vector`` order (None before the
        first epoch)."""
        if self._loss_trackers is None:
            return None
        return [list(v.shape) for v in self._state_variables()]

    def load_totals(self, vector, layout=None):
        variables = self._state_variables()
        if layout is not None and [list(s) for s in layout] != self.totals_layout():
            raise ValueError(f"the saved metric totals have shapes {layout}, this model's "
                             f"metrics have {self.totals_layout()}")
        position = 0
        for variable in variables:
            size = int(np.prod(variable.shape))
            variable.assign(np.asarray(vector[position:position + size]).reshape(variable.shape))
            position += size

    def logs(self):
        values = [t.result() for t in self._loss_trackers] + \
            [_loggable(metric.result()) for _, metric in self.metrics]
        return dict(zip(self.log_names, values))


def _loggable(value):
    """A metric's result as a float (or a list of floats for several thresholds)."""
    array = np.asarray(value, dtype=np.float64)
    return float(array) if array.ndim == 0 else array.tolist()
