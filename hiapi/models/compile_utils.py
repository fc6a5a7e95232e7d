"""What ``compile`` asked for, resolved per model output: losses, loss weights and metrics, and
the host-side trackers that turn each step's statistics into the logged values.

Keras's forms are accepted: one loss for every output, or a list or a dict keyed by output
name; metrics as a list (applied to every output), a list of lists, or a dict. With several
outputs the logs hold ``loss``, ``<output>_loss`` and ``<output>_<metric>``.
"""
import numpy as np

from hiapi import losses as losses_module
from hiapi import metrics as metrics_module
from hiapi.graph import ops
from hiapi.layers import masks


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
            what != "metrics" or all(isinstance(v, (list, tuple)) for v in value)):
        if len(value) != len(names):
            raise ValueError(f"compile: got {len(value)} {what} for {len(names)} outputs")
        return list(value)
    return [value] * len(names)


class CompiledTargets:
    def __init__(self, loss, loss_weights, metrics, output_names):
        self.names = list(output_names)
        self.losses = [losses_module.get(l) if l is not None else None
                       for l in _per_output(loss, self.names, "losses", None)]
        if any(l is None for l in self.losses):
            missing = [n for n, l in zip(self.names, self.losses) if l is None]
            raise ValueError(f"compile: no loss given for output(s) {missing}")
        self.loss_weights = [float(w) for w in
                             _per_output(loss_weights, self.names, "loss_weights", 1.0)]
        self.metric_ids = [list(m or []) for m in _per_output(metrics, self.names, "metrics", [])]
        self.metrics = None          # [(output index, Metric)], resolved against shapes

    def prepare_labels(self, ys):
        if len(ys) != len(self.losses):
            raise ValueError(f"the model has {len(self.losses)} outputs ({self.names}), got "
                             f"{len(ys)} target arrays")
        return [loss.prepare_labels(y) for loss, y in zip(self.losses, ys)]

    def build(self, targets, outputs, weights, extra_losses):
        """Graph outputs of a step: total loss, per-output losses (several outputs only), then
        each metric's statistics."""
        if self.metrics is None:
            self.metrics = [(i, metrics_module.get(m, targets[i].shape, outputs[i].shape))
                            for i, ids in enumerate(self.metric_ids) for m in ids]
            if len(self.names) > 1:
                for i, metric in self.metrics:
                    metric.name = f"{self.names[i]}_{metric.name}"
        # a masked sequence output (Embedding(mask_zero=True), Masking) weighs out its padding
        per_output = [loss(y, out, masks.mask_loss_weights(out, w, loss.reduction))
                      for loss, y, out, w in zip(self.losses, targets, outputs, weights)]
        total = None
        for term, weight in zip(per_output, self.loss_weights):
            term = term if weight == 1.0 else weight * term
            total = term if total is None else total + term
        for term in extra_losses:            # regularization
            total = total + ops.cast(term, total.dtype)
        statistics = [s for i, metric in self.metrics
                      for s in metric.statistics(targets[i], outputs[i])]
        return [total] + (per_output if len(per_output) > 1 else []) + statistics

    @property
    def log_names(self):
        losses = [f"{name}_loss" for name in self.names] if len(self.names) > 1 else []
        return ["loss"] + losses + [metric.name for _, metric in self.metrics or []]

    # ---- host side: running values over an epoch --------------------------------------------
    def reset(self):
        n_losses = 1 + (len(self.names) if len(self.names) > 1 else 0)
        self._loss_trackers = [metrics_module.Mean() for _ in range(n_losses)]
        for _, metric in self.metrics or []:
            metric.reset_state()

    def record(self, results, batch_size):
        """Add one step's outputs; returns the step's total loss."""
        position = 0
        for tracker in self._loss_trackers:
            tracker.update_state(float(results[position]) * batch_size, batch_size)
            position += 1
        for _, metric in self.metrics:
            metric.update_state(*results[position:position + metric.n_statistics])
            position += metric.n_statistics
        return float(results[0])

    def totals_vector(self):
        """Every running total as one float64 vector (to sum over workers)."""
        parts = [t.totals for t in self._loss_trackers] + [m.totals for _, m in self.metrics]
        return np.concatenate([np.ravel(v) for totals in parts for v in totals]).astype(
            np.float64)

    def load_totals(self, vector):
        position = 0
        for tracker in self._loss_trackers + [m for _, m in self.metrics]:
            loaded = []
            for value in tracker.totals:
                size = np.size(value)
                loaded.append(vector[position:position + size].reshape(np.shape(value)))
                position += size
            tracker.totals = loaded

    def logs(self):
        values = [t.result() for t in self._loss_trackers] + \
            [metric.result() for _, metric in self.metrics]
        return dict(zip(self.log_names, values))


def class_weights_to_sample_weights(class_weight, y):
    """Per-sample weights from ``{class: weight}`` for integer or one-hot labels."""
    labels = np.asarray(y)
    if labels.ndim > 1 and labels.shape[-1] > 1:
        labels = labels.argmax(axis=-1)
    labels = labels.reshape(len(labels), -1)[:, 0].astype(np.int64)
    weights = np.ones(len(labels), np.float32)
    for cls, weight in class_weight.items():
        weights[labels == int(cls)] = weight
    return weights
