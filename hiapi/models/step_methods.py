"""Keras 3's overridable steps and what they call: ``train_step``, ``test_step``,
``predict_step``, ``compute_loss``, ``compute_metrics``, ``metrics``; and tf.keras 2's
``compiled_loss`` / ``compiled_metrics``.

A subclass overrides a step as in Keras's "Customizing what happens in fit()" guide::

    class CustomModel(hiapi.Model):
        def train_step(self, data):
            x, y = data
            with hiapi.GradientTape() as tape:
                y_pred = self(x, training=True)
                loss = self.compute_loss(y=y, y_pred=y_pred)
            grads = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply(grads, self.trainable_variables)
            for metric in self.metrics:
                if metric.name == "loss":
                    metric.update_state(loss)
                else:
                    metric.update_state(y, y_pred)
            return {m.name: m.result() for m in self.metrics}

``fit`` traces the step once into a compiled graph (``custom_steps.py``), so it runs on every
backend and, under a data-parallel Strategy, ``optimizer.apply`` averages the gradients over
workers first. The bodies below are Keras 3's defaults, used when a subclass calls
``super().train_step(data)`` or overrides only another step.
"""
from __future__ import annotations

from typing import Any

from hiapi import metrics as metrics_module
from hiapi.graph import ops
from hiapi.graph.gradient_tape import GradientTape
from hiapi.layers.layer import _flatten
from hiapi.models.compile_metrics import CompiledLoss, CompileMetrics, compiled_loss_value
from hiapi.utils.data_structures import unpack_x_y_sample_weight


class StepMethods:
    _loss_tracker: Any = None
    _compile_metrics: Any = None

    def train_step(self: Any, data: Any) -> dict[str, Any]:
        x, y, sample_weight = unpack_x_y_sample_weight(data)
        with GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight)
        self._loss_tracker.update_state(loss, sample_weight=_batch_size(x))
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply(grads, self.trainable_variables)
        return self.compute_metrics(x, y, y_pred, sample_weight=sample_weight)

    def test_step(self: Any, data: Any) -> dict[str, Any]:
        x, y, sample_weight = unpack_x_y_sample_weight(data)
        y_pred = self(x, training=False)
        loss = self.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight,
                                 training=False)
        self._loss_tracker.update_state(loss, sample_weight=_batch_size(x))
        return self.compute_metrics(x, y, y_pred, sample_weight=sample_weight)

    def predict_step(self: Any, data: Any) -> Any:
        x, _, _ = unpack_x_y_sample_weight(data)
        return self(x, training=False)

    def compute_loss(self, x: Any = None, y: Any = None, y_pred: Any = None,
                     sample_weight: Any = None, training: bool = True) -> Any:
        """The compiled losses of ``y_pred`` against ``y`` plus the losses the layers added
        (regularization, ``add_loss``) while the step was traced: a scalar tensor."""
        return compiled_loss_value(self, y, y_pred, sample_weight)

    def compute_metrics(self, x: Any, y: Any, y_pred: Any,
                        sample_weight: Any = None) -> dict[str, Any]:
        """Update the compiled metrics and return every metric's result (``self.metrics``)."""
        if self._compile_metrics is not None and y is not None:
            self._compile_metrics.update_state(y, y_pred, sample_weight)
        return self.get_metrics_result()

    def get_metrics_result(self) -> dict[str, Any]:
        return {metric.name: metric.result() for metric in self.metrics}

    @property
    def metrics(self) -> list[Any]:
        """The "loss" tracker and the compiled metrics (once compiled), then the Metric objects
        held as attributes of the model; ``fit`` and ``evaluate`` reset them every epoch."""
        found = []
        if getattr(self, "compiled", False):
            found.append(self._loss_tracker)
            if self._compile_metrics is not None and self._compile_metrics.has_metrics:
                found.append(self._compile_metrics)
        for value in vars(self).values():
            if isinstance(value, metrics_module.Metric) and value not in found:
                found.append(value)
        return found

    def reset_metrics(self) -> None:
        for metric in self.metrics:
            metric.reset_state()

    @property
    def compiled_loss(self) -> CompiledLoss:
        """tf.keras 2's ``self.compiled_loss(y, y_pred, sample_weight, regularization_losses)``."""
        return CompiledLoss(self)

    @property
    def compiled_metrics(self) -> Any:
        """tf.keras 2's ``self.compiled_metrics.update_state(y, y_pred, sample_weight)``."""
        if self._compile_metrics is None:         # compiled without metrics: updates nothing
            self._compile_metrics = CompileMetrics([])
        return self._compile_metrics


def _batch_size(x):
    first = _flatten(x)[0]
    return ops.cast(ops.size(first, axis=0), "float32") if first.ndim else 1.0
