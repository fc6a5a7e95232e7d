"""What a custom ``train_step`` reaches through the model: ``self.compiled_loss`` and
``self.compiled_metrics`` (tf.keras 2), ``self.compute_loss`` and ``self.metrics`` (Keras 3).

``CompileMetrics`` holds the metrics given to ``compile`` as one Metric named
``compile_metrics`` whose ``result()`` is a dict (Keras 3's; the logs flatten it), resolved
against the first labels and predictions it sees ("accuracy" becomes the sparse or
categorical kind by their shapes). In a traced step its ``update_state`` is made on the host
after each run, like any metric's. ``compiled_loss`` adds the compiled losses over the
outputs, the given regularization losses and those the layers added, and updates the model's
"loss" tracker, as tf.keras 2's does.
"""
from __future__ import annotations

from hiapi import metrics as metrics_module
from hiapi.graph import ops
from hiapi.layers.layer import _flatten
from hiapi.graph.tracing import traced_losses
from hiapi.models.compile_utils import CompiledTargets, _as_list, _per_output


class CompileMetrics(metrics_module.Metric):
    def __init__(self, metrics, weighted_metrics=None, name="compile_metrics"):
        super().__init__(name=name)
        self._ids, self._weighted_ids = metrics, weighted_metrics
        self._metrics = None        # [(output index, Metric, weighted)] once resolved

    def _resolve(self, ys, preds):
        names = [f"output_{i}" for i in range(len(preds))]
        resolved = []
        for weighted, table in ((False, self._ids), (True, self._weighted_ids)):
            for i, ids in enumerate(_per_output(table, names, "metrics", [])):
                for identifier in _as_list(ids):
                    metric = metrics_module.get(identifier, tuple(ys[i].shape),
                                                tuple(preds[i].shape))
                    if any(m is metric for _, m, _ in resolved):
                        metric = metrics_module.clone(metric)
                    if len(preds) > 1:
                        metric.name = f"{names[i]}_{metric.name}"
                    resolved.append((i, metric, weighted))
        return resolved

    @metrics_module.runs_in_steps
    def update_state(self, y_true, y_pred, sample_weight=None):
        """Update each compiled metric (in a traced step, each records its own update, so a
        built-in one computes its statistics in the step)."""
        ys, preds = _flatten(y_true), _flatten(y_pred)
        weights = _flatten(sample_weight) if isinstance(sample_weight, (list, tuple, dict)) \
            else [sample_weight] * len(preds)
        if self._metrics is None:
            self._metrics = self._resolve(ys, preds)
        for i, metric, weighted in self._metrics:
            metric.update_state(ys[i], preds[i], sample_weight=weights[i] if weighted else None)

    def result(self):
        return {metric.name: metric.result() for _, metric, _ in self._metrics or []}

    def reset_state(self):
        for _, metric, _ in self._metrics or []:
            metric.reset_state()

    @property
    def has_metrics(self):
        return bool(_as_list(self._ids) or _as_list(self._weighted_ids))

    @property
    def variables(self):
        return [v for _, metric, _ in self._metrics or [] for v in metric.variables]

    @property
    def metrics(self):
        return [metric for _, metric, _ in self._metrics or []]


class CompiledLoss:
    """tf.keras 2's ``model.compiled_loss(y, y_pred, sample_weight, regularization_losses)``."""

    def __init__(self, model):
        self.model = model

    def __call__(self, y_true, y_pred, sample_weight=None, regularization_losses=None):
        total = compiled_loss_value(self.model, y_true, y_pred, sample_weight,
                                    regularization_losses)
        self.model._loss_tracker.update_state(total)
        return total


def compiled_loss_value(model, y, y_pred, sample_weight, extra_losses=None):
    """The compiled losses of ``y_pred`` against ``y`` (weighted per output), plus
    ``extra_losses`` and the losses the layers added while this step was traced."""
    terms = []
    loss_ids = getattr(model, "_loss_ids", None)
    if loss_ids is not None and y is not None and y_pred is not None:
        outputs, labels = _flatten(y_pred), _flatten(y)
        names = model.output_names(len(outputs))
        targets = CompiledTargets(loss_ids, model._loss_weight_ids, None, names)
        weights = _flatten(sample_weight) if isinstance(sample_weight, (list, tuple, dict)) \
            else [sample_weight] * len(outputs)
        if len(labels) != len(outputs):
            raise ValueError(f"Model {model.name!r}: compute_loss got {len(labels)} label "
                             f"tensors for {len(outputs)} outputs")
        for loss, scale, label, output, weight in zip(targets.losses, targets.loss_weights,
                                                      labels, outputs, weights):
            if loss is not None:
                term = loss(label, output, weight)
                terms.append(term if scale == 1.0 else term * scale)
    # given regularization losses (tf.keras 2's ``self.losses``) stand for the traced ones
    terms += list(extra_losses) if extra_losses is not None else traced_losses()
    if not terms:         # Keras (but on JAX): an error, not a loss of zero to "minimise"
        raise ValueError(
            f"Model {model.name!r}: No loss to compute: no loss was given to compile() and no "
            f"layer adds one; give compile() a loss, or call self.add_loss(...) in a layer's "
            f"call")
    total = terms[0]
    for term in terms[1:]:
        total = total + ops.cast(term, total.dtype)
    return total
