"""The training API every Model has: compile, fit, evaluate, predict, and the *_on_batch forms.

One loop for all backends: batches are sliced on the host, fed to a compiled step (see
``steps.py``), and the step's additive statistics are summed into the metrics, whose results go
to the callbacks and the progress bar.
"""
import numpy as np

from hiapi import losses as losses_module
from hiapi import metrics as metrics_module
from hiapi import optimizers as optimizers_module
from hiapi import random as _random
from hiapi.callbacks import CallbackList, History, ProgbarLogger
from hiapi.models import data, steps


class Trainer:
    def __init__(self):
        self.compiled = False
        self.optimizer = None
        self.stop_training = False
        self.history = None
        self._step_functions = {}

    # ---- compile -----------------------------------------------------------------------------
    def compile(self, optimizer="rmsprop", loss=None, loss_weights=None, metrics=None, **kwargs):
        """Configure training, with Keras's arguments: ``compile(optimizer, loss, metrics)``."""
        unsupported = set(kwargs) - {"run_eagerly", "jit_compile", "steps_per_execution",
                                     "weighted_metrics", "auto_scale_loss"}
        if unsupported:
            raise TypeError(f"compile: unexpected keyword argument(s) {sorted(unsupported)}")
        if loss is None:
            raise ValueError("compile: a loss is required, e.g. "
                             "loss='sparse_categorical_crossentropy'")
        self.optimizer = optimizers_module.get(optimizer)
        self._loss_ids = loss
        self._loss_weight_ids = loss_weights
        self._metric_ids = list(metrics or [])
        self.compiled_losses = None
        self.compiled_metrics = None
        self._step_functions = {}
        self.compiled = True

    def _resolve_losses(self, n_outputs):
        ids = self._loss_ids if isinstance(self._loss_ids, (list, tuple)) \
            else [self._loss_ids] * n_outputs
        if len(ids) != n_outputs:
            raise ValueError(f"compile: got {len(ids)} losses for {n_outputs} outputs")
        self.compiled_losses = [losses_module.get(i) for i in ids]
        weights = self._loss_weight_ids or [1.0] * n_outputs
        self.loss_weights = [float(w) for w in weights]

    def build_metrics(self, targets, outputs):
        """Resolve metric names against the first output's shapes (once per compile)."""
        if self.compiled_metrics is None:
            self.compiled_metrics = [metrics_module.get(m, targets[0].shape, outputs[0].shape)
                                     for m in self._metric_ids]

    def metric_targets(self, targets, outputs):
        return [(targets[0], outputs[0])] * len(self.compiled_metrics)

    @property
    def metrics_names(self):
        return ["loss"] + [m.name for m in self.compiled_metrics or []]

    # ---- step functions ----------------------------------------------------------------------
    def _require_compiled(self, what):
        if not self.compiled:
            raise RuntimeError(f"Model {self.name!r} must be compiled before {what}(): call "
                               f"model.compile(optimizer, loss, metrics)")

    def _prepare(self, x, y=None):
        xs = data.as_list(x, "x")
        ys = data.as_list(y, "y")
        if not xs:
            raise ValueError("x is required")
        self._ensure_built(xs)
        specs = self.input_specs()
        if len(xs) != len(specs):
            raise ValueError(f"Model {self.name!r} expects {len(specs)} input arrays, got "
                             f"{len(xs)}")
        from hiapi.models.functional import _check_input
        for index, (array, (shape, _)) in enumerate(zip(xs, specs)):
            _check_input(self, index, shape, array.shape)
        if ys:
            if self.compiled_losses is None:
                self._resolve_losses(len(ys))
            ys = [loss.prepare_labels(y) for loss, y in zip(self.compiled_losses, ys)]
            data.num_samples(xs, ys)
        return xs, ys

    def _ensure_built(self, xs):
        if not self.built and hasattr(self, "_stack"):
            self.build((None,) + xs[0].shape[1:])

    def _step(self, kind, xs, ys=()):
        key = (kind,) + tuple((a.ndim, a.dtype.kind) for a in list(xs) + list(ys))
        function = self._step_functions.get(key)
        if function is None:
            builder = {"train": steps.train_function, "test": steps.test_function,
                       "predict": steps.predict_function}[kind]
            function = builder(self, xs, ys) if kind != "predict" else builder(self, xs)
            self._step_functions[key] = function
        return function

    def _reset_metrics(self):
        self._loss_tracker = metrics_module.Mean(name="loss")
        for metric in self.compiled_metrics or []:
            metric.reset_state()

    def _record(self, results, batch_size):
        loss, statistics = float(results[0]), results[1:]
        self._loss_tracker.update_state(loss * batch_size, batch_size)
        position = 0
        for metric in self.compiled_metrics:
            count = metric.n_statistics
            metric.update_state(*statistics[position:position + count])
            position += count
        return loss

    def _logs(self):
        logs = {"loss": self._loss_tracker.result()}
        for metric in self.compiled_metrics:
            logs[metric.name] = metric.result()
        return logs

    # ---- fit ---------------------------------------------------------------------------------
    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto", callbacks=None,
            validation_split=0.0, validation_data=None, shuffle=True, class_weight=None,
            sample_weight=None, initial_epoch=0, steps_per_epoch=None, validation_steps=None,
            validation_batch_size=None, validation_freq=1):
        """Train for ``epochs`` epochs; returns a ``History``. Arguments as in Keras."""
        self._require_compiled("fit")
        if class_weight is not None or sample_weight is not None:
            raise NotImplementedError("class_weight and sample_weight are not supported yet")
        if y is None:
            raise ValueError("fit: y (the targets) is required")
        batch_size = data.check_batch_size(batch_size)
        xs, ys = self._prepare(x, y)
        validation = None
        if validation_data is not None:
            validation = self._prepare(*data.unpack_validation_data(validation_data))
        elif validation_split:
            (xs, ys), validation = data.split_validation(xs, ys, validation_split)
        data.check_finite(xs + ys, "training data")
        n = data.num_samples(xs, ys)
        steps_total = -(-n // batch_size)
        if steps_per_epoch is not None:
            steps_total = min(steps_total, int(steps_per_epoch))
        verbose = 1 if verbose == "auto" else int(verbose)
        self.history = History()
        hooks = list(callbacks or []) + [self.history]
        if verbose:
            hooks.append(ProgbarLogger(verbose))
        hooks = CallbackList(hooks, self, {"epochs": epochs, "steps": steps_total,
                                           "verbose": verbose})
        train = self._step("train", xs, ys)
        self.stop_training = False
        self._resume_at = None
        hooks.on_train_begin()
        skip = 0
        if self._resume_at is not None:          # set by BackupAndRestore
            initial_epoch, skip = self._resume_at
        logs, step_values = {}, self.optimizer.step_values()
        for epoch in range(initial_epoch, epochs):
            self._reset_metrics()
            hooks.on_epoch_begin(epoch)
            batches = data.batch_indices(n, batch_size, shuffle, _random.epoch_generator(epoch))
            for step in range(skip, min(len(batches), steps_total)):
                hooks.on_train_batch_begin(step)
                feed = [a[batches[step]] for a in xs] + [a[batches[step]] for a in ys]
                step_values = self.optimizer.step_values()
                results = train(*feed, *step_values)
                loss = self._record(results, len(feed[0]))
                logs = self._logs()
                hooks.on_train_batch_end(step, logs)
                if not np.isfinite(loss) and not self.stop_training:
                    raise FloatingPointError(
                        f"Model {self.name!r}: the loss became {loss} at epoch {epoch + 1}, "
                        f"batch {step}; training diverged (lower the learning rate, or check "
                        f"the data and the loss; TerminateOnNaN stops without an error)")
                if self.stop_training:
                    break
            skip = 0
            logs = {**self._logs(), "learning_rate": step_values[0]}
            if validation is not None and (epoch + 1) % validation_freq == 0:
                val_logs = self._evaluate_arrays(*validation, validation_batch_size or batch_size,
                                                 validation_steps)
                logs.update({f"val_{k}": v for k, v in val_logs.items()})
            hooks.on_epoch_end(epoch, logs)
            if self.stop_training:
                break
        hooks.on_train_end(logs)
        return self.history

    # ---- evaluate / predict ------------------------------------------------------------------
    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", sample_weight=None,
                 steps=None, callbacks=None, return_dict=False):
        """Loss and metrics over the data: a scalar if there are no metrics, else a list in
        ``metrics_names`` order (a dict with ``return_dict=True``)."""
        self._require_compiled("evaluate")
        if sample_weight is not None:
            raise NotImplementedError("sample_weight is not supported yet")
        xs, ys = self._prepare(x, y)
        logs = self._evaluate_arrays(xs, ys, data.check_batch_size(batch_size), steps,
                                     CallbackList(callbacks or [], self, {}))
        if verbose:     # "auto" prints, as Keras's evaluate does
            from hiapi.callbacks.progbar import format_logs
            print(f"evaluate - {format_logs(logs)}", flush=True)
        if return_dict:
            return logs
        values = list(logs.values())
        return values[0] if len(values) == 1 else values

    def _evaluate_arrays(self, xs, ys, batch_size, steps=None, hooks=None):
        test = self._step("test", xs, ys)
        self._reset_metrics()
        n = data.num_samples(xs, ys)
        if hooks:
            hooks.on_test_begin()
        for step, index in enumerate(data.batch_indices(n, batch_size, False, None)):
            if steps is not None and step >= steps:
                break
            if hooks:
                hooks.on_test_batch_begin(step)
            feed = [a[index] for a in xs] + [a[index] for a in ys]
            self._record(test(*feed), len(feed[0]))
            if hooks:
                hooks.on_test_batch_end(step, self._logs())
        logs = self._logs()
        if hooks:
            hooks.on_test_end(logs)
        return logs

    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None):
        """Model outputs for ``x`` as numpy arrays (a list when the model has several)."""
        xs, _ = self._prepare(x)
        predict = self._step("predict", xs)
        batch_size = data.check_batch_size(batch_size)
        n = data.num_samples(xs, [])
        chunks = []
        for step, index in enumerate(data.batch_indices(n, batch_size, False, None)):
            if steps is not None and step >= steps:
                break
            chunks.append(predict(*[a[index] for a in xs]))
        outputs = [np.concatenate(parts) for parts in zip(*chunks)]
        return outputs[0] if len(outputs) == 1 else outputs

    # ---- single batches ----------------------------------------------------------------------
    def train_on_batch(self, x, y=None, sample_weight=None, class_weight=None, return_dict=False):
        """One optimizer step on one batch; returns that batch's loss (and metrics)."""
        self._require_compiled("train_on_batch")
        xs, ys = self._prepare(x, y)
        self._reset_metrics()
        self._record(self._step("train", xs, ys)(*xs, *ys, *self.optimizer.step_values()),
                     len(xs[0]))
        return self._batch_result(return_dict)

    def test_on_batch(self, x, y=None, sample_weight=None, return_dict=False):
        self._require_compiled("test_on_batch")
        xs, ys = self._prepare(x, y)
        self._reset_metrics()
        self._record(self._step("test", xs, ys)(*xs, *ys), len(xs[0]))
        return self._batch_result(return_dict)

    def predict_on_batch(self, x):
        xs, _ = self._prepare(x)
        outputs = self._step("predict", xs)(*xs)
        return outputs[0] if len(outputs) == 1 else outputs

    def _batch_result(self, return_dict):
        logs = self._logs()
        if return_dict:
            return logs
        values = list(logs.values())
        return values[0] if len(values) == 1 else values

    def summary(self, print_fn=None):
        """Print layers, output shapes and parameter counts, as Keras's ``summary()``."""
        from hiapi.models.summary import summary_text
        (print_fn or print)(summary_text(self))
