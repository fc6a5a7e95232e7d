"""The training API every Model has: compile, fit, evaluate, predict, and the *_on_batch forms.

One loop for all backends: batches are sliced on the host, fed to a compiled step (see
``steps.py``), and the step's losses and metric statistics are summed on the host into the
logged values (``compile_utils.CompiledTargets``), which go to the callbacks and progress bar.
"""
from __future__ import annotations

import contextlib
import math
import weakref
from typing import Any, Callable, Literal, Mapping, Sequence

import numpy as np

from hiapi.hints import (ArrayLike, InputData, LossLike, MetricLike, OptimizerLike, Predictions,
                         Verbose)
from hiapi import metrics as metrics_module
from hiapi import optimizers as optimizers_module
from hiapi.backends import get_backend
from hiapi.graph import eager_tape
from hiapi import random as _random
from hiapi.runtime import state_writes, thread_tuner, threads
from hiapi.callbacks import Callback, CallbackList, History, ProgbarLogger
from hiapi.callbacks import timeline
from hiapi.models import data, steps
from hiapi.models.data_adapters import ArrayAdapter, fit_adapters, get_adapter, warn_ran_out
from hiapi.models.distribution import LOCAL
from hiapi.models.input_signature import check_input
from hiapi.models.strategy_scope import current_strategy
from hiapi.models import custom_steps
from hiapi.models.compile_metrics import CompileMetrics
from hiapi.models.compile_saving import CompileSaving
from hiapi.models.compile_utils import CompiledTargets
from hiapi.models.step_methods import StepMethods


class Trainer(StepMethods, CompileSaving):
    name: str            # Layer's: every Model is a Layer and a Trainer

    def __init__(self):
        self.compiled = False
        self.optimizer = None
        self.stop_training = False
        self.history = None
        self._compiled_targets = None
        self._step_functions = {}
        self._strategy = None

    @property
    def distribution(self):
        """The strategy this model was compiled under (``Local`` for one process)."""
        return self._strategy or LOCAL

    # ---- compile -----------------------------------------------------------------------------
    def compile(self, optimizer: OptimizerLike = "rmsprop", loss: LossLike = None,
                loss_weights: Sequence[float] | Mapping[str, float] | None = None,
                metrics: MetricLike = None, memory: Literal["sublinear"] | None = None,
                memory_budget: int | str | None = None, **kwargs: Any) -> None:
        """Configure training with Keras's arguments: ``compile(optimizer, loss, metrics)``.
        ``loss``, ``loss_weights`` and ``metrics`` may be given per output (list or dict).

        hiapi's additions: ``memory="sublinear"`` recomputes forward activations in the
        backward pass from about sqrt(n) checkpoints (Chen et al. 2016); ``memory_budget``
        (bytes or "2GB") picks the cheapest recomputation that fits, or fails naming the
        smallest budget achievable. See ``memory_report()``."""
        if memory not in (None, "sublinear"):
            raise ValueError(f"compile: memory must be None or 'sublinear', got {memory!r}")
        self._recompute = memory_budget if memory_budget is not None else memory
        unsupported = set(kwargs) - {"run_eagerly", "jit_compile", "steps_per_execution",
                                     "weighted_metrics", "auto_scale_loss"}
        if unsupported:
            raise TypeError(f"compile: unexpected keyword argument(s) {sorted(unsupported)}")
        self.optimizer = optimizers_module.get(optimizer)
        # Keras 3: a mixed_float16 model trains with dynamic loss scaling unless told not to
        policy = getattr(self, "dtype_policy", None)       # Layer's: every Model is one
        self._scaled_by_compile = kwargs.get("auto_scale_loss", True) and \
            policy is not None and policy.name == "mixed_float16" and \
            not isinstance(self.optimizer, optimizers_module.LossScaleOptimizer)
        if self._scaled_by_compile:     # a .keras file's compile_config keeps the argument
            self.optimizer = optimizers_module.LossScaleOptimizer(self.optimizer)
        from hiapi import losses
        for item in (loss.values() if isinstance(loss, dict) else
                     loss if isinstance(loss, (list, tuple)) else [loss]):
            if item is not None:             # None: that output has no loss (Keras)
                losses.get(item)             # fail now on an unknown name
        self._strategy = current_strategy()
        self._compile_args = (loss, loss_weights, metrics)
        self._loss_ids, self._loss_weight_ids = loss, loss_weights
        self._metric_ids = metrics if metrics is not None else []
        self._weighted_metric_ids = kwargs.get("weighted_metrics")   # get sample weights
        self._compiled_targets = None
        self._step_functions = {}
        self._loss_tracker = metrics_module.Mean(name="loss")      # for custom steps
        self._compile_metrics = CompileMetrics(metrics, self._weighted_metric_ids) \
            if metrics or self._weighted_metric_ids else None
        self.compiled = True

    _builtin_compile = compile

    def _needs_targets(self):
        """Whether fit/evaluate need y: a compiled loss or metric reads it. Without either, a
        model whose loss comes from add_loss trains on x alone (Keras's VAE)."""
        ids = getattr(self, "_loss_ids", None)
        losses = ids.values() if isinstance(ids, dict) else \
            ids if isinstance(ids, (list, tuple)) else [ids]
        return any(loss is not None for loss in losses) or \
            bool(getattr(self, "_metric_ids", None)) or \
            bool(getattr(self, "_weighted_metric_ids", None))

    def compiled_targets(self, outputs):
        """The per-output losses and metrics, resolved once the output names are known."""
        if self._compiled_targets is None:
            self._compiled_targets = CompiledTargets(
                *self._compile_args, self.output_names(len(outputs)),
                weighted_metrics=getattr(self, "_weighted_metric_ids", None))
        return self._compiled_targets

    def output_names(self, count):
        """Keras's output names: the layers that produce the outputs."""
        symbolic = getattr(self, "outputs", None)
        if isinstance(getattr(self, "_outputs_struct", None), dict):
            names = sorted(self._outputs_struct)        # Model(outputs={"name": ...})
        elif symbolic:
            names = [var._keras_history[0].name for var in symbolic]
        elif getattr(self, "_stack", None):
            names = [self._stack[-1].name]
        else:
            names = [f"output_{i}" for i in range(count)]
        if len(set(names)) != len(names):
            names = [f"{name}_{i}" for i, name in enumerate(names)]
        return names

    @property
    def metrics_names(self) -> list[str]:
        return self._compiled_targets.log_names if self._compiled_targets else ["loss"]

    # ---- data and step functions -------------------------------------------------------------
    def _require_compiled(self, what):
        if not self.compiled:
            raise RuntimeError(f"Model {self.name!r} must be compiled before {what}(): call "
                               f"model.compile(optimizer, loss, metrics)")

    def _input_names(self):
        """The Input layers' names (functional models), for x given as a dict."""
        if isinstance(getattr(self, "_inputs_struct", None), dict):
            return sorted(self._inputs_struct)           # Model(inputs={"name": ...})
        if getattr(self, "_signature", None) is not None:
            return self._signature.names                 # a subclassed model fed a dict
        symbolic = getattr(self, "inputs", None)
        return [var._keras_history[0].name for var in symbolic] if symbolic else None

    def _prepare(self, x, y=None, sample_weight=None, class_weight=None, check_finite=False,
                 lazy=False):
        """Checked arrays ``(xs, ys, weights)`` from the user's x, y and sample_weight (arrays,
        lists, or dicts keyed by input/output name): labels converted for the losses, class
        weights turned into sample weights, NaN refused when ``check_finite``; with ``lazy``
        (an adapter that reads batches) inputs on disk stay there (``disk_array``)."""
        self.learn_inputs(x)
        if y is not None and self.uses_custom_steps():
            return custom_steps.prepare(self, x, y, sample_weight, class_weight, check_finite)
        xs = data.as_list(data.by_name(x, self._input_names(), "x", "input"), "x", lazy)
        if not xs:
            raise ValueError("x is required")
        if not self.built and hasattr(self, "_stack"):
            self.build((None,) + xs[0].shape[1:])
        specs = self.input_specs()
        if len(xs) != len(specs):
            raise ValueError(f"Model {self.name!r} expects {len(specs)} input arrays, got "
                             f"{len(xs)}")
        for index, (array, (shape, _)) in enumerate(zip(xs, specs)):
            check_input(self, index, shape, array.shape)
        if y is None:
            return xs, [], []
        if self._compiled_targets is None:       # trace once to learn the output names
            self.compiled_targets(steps.predict_function(self, xs).outputs)
        names = self._compiled_targets.names
        ys = data.as_list(data.by_name(y, names, "y", "output"), "y")
        ys = self._compiled_targets.prepare_labels(ys)
        n = data.num_samples(xs, ys)
        weights = self._sample_weights(sample_weight, class_weight, xs, ys, n)
        if check_finite:
            data.check_finite(xs + ys, "training data")
        return xs, ys, weights

    def _sample_weights(self, sample_weight, class_weight, xs, ys, n):
        if class_weight is not None:
            if len(ys) != 1:
                raise ValueError("class_weight is only supported for models with one output")
            if sample_weight is not None:
                raise ValueError("give sample_weight or class_weight, not both")
            units = self._step("predict", xs).outputs[0].shape[-1]
            num_classes = None if units is None else max(int(units), 2)   # 1 unit: binary
            return [data.class_weight_to_sample_weights(class_weight, ys[0], num_classes)]
        if sample_weight is None:
            return []
        weights = data.as_list(data.by_name(sample_weight, self._compiled_targets.names,
                                            "sample_weight", "output"), "sample_weight")
        if len(weights) != len(ys):
            raise ValueError(f"sample_weight: got {len(weights)} arrays for {len(ys)} outputs")
        data.check_sample_weights(weights, n)
        return [w.astype(np.float32) for w in weights]

    def uses_custom_steps(self):
        """Whether fit and evaluate run this model's own train_step/test_step."""
        return custom_steps.uses_custom_steps(self)

    def _step(self, kind, xs, ys=(), weights=()):
        key = (kind, bool(weights), len(ys)) + tuple((a.ndim, a.dtype.kind) for a in [*xs, *ys]) \
            + steps.by_length(self, xs)
        function = self._step_functions.get(key)
        if function is None:
            if kind == "predict" and custom_steps.overrides(self, "predict_step") or \
                    kind != "predict" and self.uses_custom_steps():
                function = custom_steps.CustomStep(self, kind, xs, ys, weights)
            elif kind == "predict":
                function = steps.predict_function(self, xs)
                if self.compiled and self._loss_ids is not None:
                    self.compiled_targets(function.outputs)
            else:
                builder = steps.train_function if kind == "train" else steps.test_function
                if kind == "train":      # a pipeline strategy builds its stage's step itself
                    builder = getattr(self.distribution, "train_function", builder)
                function = builder(self, xs, ys, weighted=bool(weights))
            self._step_functions[key] = function
        return function

    # ---- fit ---------------------------------------------------------------------------------
    @eager_tape.outside
    def fit(self, x: InputData = None, y: InputData = None, batch_size: int | None = None,
            epochs: int = 1, verbose: Verbose = "auto", callbacks: Sequence[Callback] | None = None,
            validation_split: float = 0.0, validation_data: tuple[Any, ...] | InputData = None,
            shuffle: bool | str = True, class_weight: Mapping[int, float] | None = None,
            sample_weight: ArrayLike | None = None, initial_epoch: int = 0,
            steps_per_epoch: int | None = None, validation_steps: int | None = None,
            validation_batch_size: int | None = None, validation_freq: int = 1) -> History:
        """Train for ``epochs`` epochs; returns a ``History``. Arguments as in Keras.
        Under a ``hiapi.distribute.Strategy``, ``batch_size`` is per worker."""
        self._require_compiled("fit")
        return self.distribution.guard(
            self._fit, x, y, batch_size, epochs, verbose, callbacks, validation_split,
            validation_data, shuffle, class_weight, sample_weight, initial_epoch,
            steps_per_epoch, validation_steps, validation_batch_size, validation_freq)

    def _fit(self, x, y, batch_size, epochs, verbose, callbacks, validation_split,
             validation_data, shuffle, class_weight, sample_weight, initial_epoch,
             steps_per_epoch, validation_steps, validation_batch_size, validation_freq):
        plan = self.distribution
        batch_size, shuffle = data.check_batch_size(batch_size), data.check_shuffle(shuffle)
        train_data, validation = fit_adapters(
            self, x, y, sample_weight, class_weight, batch_size, plan, steps_per_epoch,
            validation_split, validation_data, validation_steps, validation_batch_size)
        train = self._step("train", *train_data.first)
        compiled = self._tracker(train)
        plan.begin(self)                        # same weights and batch order on every worker
        if plan.serves:                         # a parameter server: serve the workers
            return plan.serve(self)
        verbose = (1 if verbose == "auto" else int(verbose)) if plan.is_chief else 0
        banner = threads.new_banner(get_backend().name) if verbose == 2 else None
        if banner:                              # what sets CPU speed, once (runtime.threads)
            print(banner, flush=True)
        self.history = History()
        thread_tuner.refresh()      # the steps pick threads for the load, unless fixed since
        hooks = self._fit_callbacks(callbacks, verbose, epochs, train_data.steps)
        hooks.params["batch_size"] = getattr(train_data, "batch_size", None)
        self._fit_data = weakref.ref(train_data), weakref.ref(hooks)   # set_fit_batch_size
        self.stop_training, self._resume_at = False, None
        hooks.on_train_begin()
        skip = 0
        if self._resume_at is not None:          # set by BackupAndRestore
            initial_epoch, skip = self._resume_at
        logs = {}
        for epoch in range(initial_epoch, epochs):
            compiled.reset()
            plan.on_epoch_begin(epoch)
            hooks.on_epoch_begin(epoch)
            done = self._train_epoch(train, train_data, compiled, hooks, epoch, skip, shuffle)
            ran_out = train_data.ran_short(done, done - skip)
            if ran_out:
                warn_ran_out(train_data, epochs - initial_epoch)
                if done == skip:                 # nothing left for this epoch: it never began
                    break
            skip = 0
            plan.reduce_totals(compiled)           # every worker reports the same numbers
            logs = compiled.logs()      # no learning_rate: Keras logs it only from its LR callbacks
            if validation is not None and (epoch + 1) % validation_freq == 0:
                val_logs = self._run_test(validation, hooks)
                logs.update({f"val_{k}": v for k, v in val_logs.items()})
            hooks.on_epoch_end(epoch, logs)
            if self.stop_training or ran_out:
                break
        plan.end(self)                          # a parameter-server worker: final weights
        plan.consolidate(self)                  # sharded optimizer state onto rank 0, to save
        hooks.on_train_end(logs)
        return self.history

    def set_fit_batch_size(self, batch_size: int) -> None:
        """From a callback's ``on_epoch_begin`` (``BatchSizeScheduler``): the running ``fit``
        takes batches of ``batch_size`` from this epoch on; ``params["steps"]`` follows. A new
        batch shape compiles the step once more (kept per shape)."""
        refs = getattr(self, "_fit_data", None)
        train_data, hooks = (refs[0](), refs[1]()) if refs else (None, None)
        if train_data is None or hooks is None:
            raise RuntimeError("set_fit_batch_size: only while fit runs (from a callback)")
        if batch_size != train_data.batch_size:
            train_data.rebatch(batch_size)
            hooks.params["steps"] = train_data.steps

    def _pass_callbacks(self, callbacks, verbose, steps):
        """``evaluate``'s and ``predict``'s callbacks: the user's, then the progress line
        (``verbose="auto"`` is 1, as in Keras; only the chief process prints)."""
        verbose = (1 if verbose == "auto" else int(verbose)) if self.distribution.is_chief else 0
        return CallbackList(list(callbacks or []) + ([ProgbarLogger(verbose)] if verbose else []),
                            self, {"steps": steps, "verbose": verbose})

    def _fit_callbacks(self, callbacks, verbose, epochs, steps):
        """The user's callbacks, then fit's own: History, the progress bar and, with
        ``HIAPI_TIMELINE=trace.json``, the timeline."""
        hooks = list(callbacks or []) + [self.history] + (
            [ProgbarLogger(verbose)] if verbose else [])
        hooks += timeline.from_environment(hooks)
        return CallbackList(hooks, self, {"epochs": epochs, "steps": steps, "verbose": verbose})

    def _train_epoch(self, train, train_data, compiled, hooks, epoch, skip, shuffle):
        """The train steps of epoch ``epoch`` from step ``skip`` (a resumed epoch skips those
        done before the backup); returns the steps done."""
        plan = self.distribution
        # looked up once: the loop below runs every few milliseconds (see docs/performance.md)
        begin_batch, end_batch = hooks.on_train_batch_begin, hooks.on_train_batch_end
        logs_wanted, next_step_values = hooks.logs_wanted("on_train_batch_end"), \
            self.optimizer.step_values
        train_data.on_epoch_begin()
        done = skip
        rng = _random.epoch_generator(epoch, _random.model_shuffle_seed(self)) \
            if shuffle else None
        # closed however the epoch ends (a break, an error, Ctrl-C): a prefetching
        # adapter's thread stops with it (models/prefetch.py)
        with contextlib.closing(train_data.epoch(rng, skip, shuffle)) as batches:
            for step, (feed, local_n, global_n) in enumerate(batches, skip):
                begin_batch(step)
                results = train(*feed, *next_step_values(), *plan.step_values(local_n, global_n))
                loss = compiled.record(results, local_n)
                # logs built only when a callback reads them (Callback.reads_batch_logs)
                end_batch(step, compiled.logs() if logs_wanted(step) else {})
                done = step + 1
                if not math.isfinite(loss) and not self.stop_training:
                    raise FloatingPointError(
                        f"Model {self.name!r}: the loss became {loss} at epoch {epoch + 1}, "
                        f"batch {step}; training diverged (lower the learning rate, or check "
                        f"the data and the loss; TerminateOnNaN stops without an error)")
                if self.stop_training:
                    break
        train_data.on_epoch_end()
        return done

    # ---- evaluate / predict ------------------------------------------------------------------
    @eager_tape.outside
    def evaluate(self, x: InputData = None, y: InputData = None, batch_size: int | None = None,
                 verbose: Verbose = "auto", sample_weight: ArrayLike | None = None,
                 steps: int | None = None, callbacks: Sequence[Callback] | None = None,
                 return_dict: bool = False) -> float | list[float] | dict[str, float]:
        """Loss and metrics over the data: a scalar if there are no metrics, else a list in
        ``metrics_names`` order (a dict with ``return_dict=True``)."""
        self._require_compiled("evaluate")
        thread_tuner.refresh()      # as in fit: unless the count was fixed since
        source = get_adapter(self, x, y, sample_weight, batch_size=data.check_batch_size(
            batch_size), plan=self.distribution.evaluation_plan, steps=steps, what="evaluate")
        logs = self._run_test(source, self._pass_callbacks(callbacks, verbose, source.steps))
        return logs if return_dict else _as_result(logs)

    def _run_test(self, source, hooks):
        """Loss and metrics over one pass of ``source`` (an adapter), with the test hooks."""
        test = self._step("test", *source.first)
        compiled = self._tracker(test)
        compiled.reset()
        state_writes.note_edits()   # weights edited in place since the last call are seen
        hooks.on_test_begin()
        source.on_epoch_begin()
        ran, logs_wanted = 0, hooks.logs_wanted("on_test_batch_end")
        with contextlib.closing(source.epoch()) as batches:     # workers stop on an error
            for step, (feed, local_n, _) in enumerate(batches):
                hooks.on_test_batch_begin(step)
                compiled.record(test(*feed), local_n)
                hooks.on_test_batch_end(step, compiled.logs() if logs_wanted(step) else {})
                ran += 1
        source.on_epoch_end()
        if ran == 0:
            raise ValueError(f"{source.what}: the data ran out: the generator has no batch "
                             f"left to evaluate (a generator is consumed, not restarted; give "
                             f"the number of batches per evaluation, steps= or "
                             f"validation_steps=, and yield that many for every evaluation)")
        self.distribution.evaluation_plan.reduce_totals(compiled)
        logs = compiled.logs()
        hooks.on_test_end(logs)
        return logs

    @eager_tape.outside
    def predict(self, x: InputData, batch_size: int | None = None, verbose: Verbose = "auto",
                steps: int | None = None,
                callbacks: Sequence[Callback] | None = None) -> Predictions:
        """Model outputs for ``x`` as numpy arrays (a list when the model has several);
        ``x`` may also be a generator or ``PyDataset`` (batches of x, or (x, ...) tuples).
        Each process predicts all of its data, also under a Strategy."""
        thread_tuner.refresh()
        source = get_adapter(self, x, batch_size=data.check_batch_size(batch_size), plan=LOCAL,
                             steps=steps, what="predict", targets=False)
        predict = self._step("predict", source.first[0])
        state_writes.note_edits()   # weights edited in place since the last call are seen
        hooks = self._pass_callbacks(callbacks, verbose, source.steps)
        hooks.on_predict_begin()
        source.on_epoch_begin()
        chunks, logs_wanted = [], hooks.logs_wanted("on_predict_batch_end")
        with contextlib.closing(source.epoch()) as batches:
            for step, (feed, _, _) in enumerate(batches):
                hooks.on_predict_batch_begin(step)
                chunks.append(predict(*feed))
                hooks.on_predict_batch_end(step, {"outputs": _single(chunks[-1])}
                                           if logs_wanted(step) else {})
        source.on_epoch_end()
        hooks.on_predict_end()
        if not chunks:       # no samples: run the empty batch for each output's (0, ...) shape
            chunks.append(predict(*source.first[0]))
        return self._as_output_structure([np.concatenate(parts) for parts in zip(*chunks)])

    def _as_output_structure(self, arrays):
        """Predictions shaped like the outputs: a dict for ``Model(outputs={...})`` (Keras),
        else one array or a list."""
        structure = getattr(self, "_outputs_struct", None)
        return dict(zip(sorted(structure), arrays)) if isinstance(structure, dict) else \
            _single(arrays)

    # ---- single batches ----------------------------------------------------------------------
    @eager_tape.outside
    def train_on_batch(self, x: InputData, y: InputData = None,
                       sample_weight: ArrayLike | None = None,
                       class_weight: Mapping[int, float] | None = None,
                       return_dict: bool = False) -> float | list[float] | dict[str, float]:
        """One optimizer step on one batch; returns that batch's loss (and metrics)."""
        self._require_compiled("train_on_batch")
        xs, ys, weights = self._prepare(x, y, sample_weight, class_weight)
        step = self._step("train", xs, ys, weights)
        compiled = self._tracker(step)
        compiled.reset()
        n, plan = len(xs[0]), self.distribution
        compiled.record(step(*xs, *ys, *weights, *self.optimizer.step_values(),
                             *plan.step_values(n, plan.global_batch(n))), n)
        logs = compiled.logs()
        return logs if return_dict else _as_result(logs)

    @eager_tape.outside
    def test_on_batch(self, x: InputData, y: InputData = None,
                      sample_weight: ArrayLike | None = None,
                      return_dict: bool = False) -> float | list[float] | dict[str, float]:
        self._require_compiled("test_on_batch")
        arrays = self._prepare(x, y, sample_weight)
        source = ArrayAdapter(arrays, len(arrays[0][0]), self.distribution.evaluation_plan,
                              what="test_on_batch")
        logs = self._run_test(source, CallbackList([], self, {}))
        return logs if return_dict else _as_result(logs)

    @eager_tape.outside
    def predict_on_batch(self, x: InputData) -> Predictions:
        xs, _, _ = self._prepare(x)
        state_writes.note_edits()
        outputs = self._step("predict", xs)(*xs)
        return self._as_output_structure(list(outputs))

    def _tracker(self, step):
        """What turns a step's outputs into logs: the compiled targets, or a custom step's."""
        return getattr(step, "tracker", None) or self._compiled_targets

    def memory_report(self, print_fn: Callable[[str], Any] | None = None) -> None:
        """Print the memory plan of the last compiled train step (see ``hiapi.graph.memory``):
        planned bytes against the lower and upper bounds, parameter and state bytes, and the
        recomputation cost. Run ``fit`` or ``train_on_batch`` first. Like ``summary()`` it
        returns None (so a REPL shows it once); ``print_fn=lines.append`` captures the text."""
        train = [f for key, f in self._step_functions.items() if key[0] == "train"]
        if not train or not train[-1]._executables:
            raise RuntimeError(f"Model {self.name!r}: no train step has been compiled yet; run "
                               f"fit() or train_on_batch() first")
        from hiapi.graph.memory.report import memory_report
        text = memory_report(list(train[-1]._executables.values())[-1], self)
        (print_fn or print)(text)

    def profile(self, x: InputData, y: InputData, repeats: int = 3,
                print_fn: Callable[[str], Any] | None = None) -> list[Any]:
        """Time one train step on ``(x, y)`` (one batch) op by op and place each op type on
        this machine's roofline (``hiapi.profiler``); prints a table and returns its rows."""
        self._require_compiled("profile")
        executable, feeds = self.compiled_train_step(x, y)
        from hiapi.profiler import format_profile, profile_executable
        rows, roofline = profile_executable(executable, feeds, repeats)
        (print_fn or print)(format_profile(rows, roofline))
        return rows

    def compiled_train_step(self, x: InputData, y: InputData) -> tuple[Any, list[Any]]:
        """The compiled train step for the batch ``(x, y)`` and its inputs on the backend, so
        that ``executable.run(feeds)`` runs (and updates) exactly what ``train_on_batch``
        would, without the trainer around it: what the profiler and the GPU checks time."""
        xs, ys, weights = self._prepare(x, y)
        step = self._step("train", xs, ys, weights)
        n, plan = len(xs[0]), self.distribution
        feeds = [*xs, *ys, *weights, *self.optimizer.step_values(),
                 *plan.step_values(n, plan.global_batch(n))]
        coerced = [step._coerce(var, value, get_backend()) for var, value in
                   zip(step.inputs, feeds)]
        return step.executable(tuple(tuple(a.shape) for a in coerced)), coerced

    def summary(self, line_length: int | None = None, positions: Sequence[float] | None = None,
                print_fn: Callable[[str], Any] | None = None, expand_nested: bool = False,
                show_trainable: bool = False, layer_range: Sequence[str] | None = None) -> None:
        """Print layers, output shapes and parameter counts, as Keras's ``summary()`` (with its
        arguments); returns None."""
        from hiapi.models.summary import summary_text
        (print_fn or print)(summary_text(self, line_length, positions, show_trainable,
                                         layer_range, expand_nested))


def _as_result(logs):
    values = list(logs.values())
    return values[0] if len(values) == 1 else values




def _single(outputs):
    return outputs[0] if len(outputs) == 1 else outputs
