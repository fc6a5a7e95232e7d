"""``Optimizer``: the base that turns gradients into update ops in the train graph.

A subclass writes only ``build`` (its slot Variables) and ``update_step`` (its rule, as ops on
the gradient and the current weight value). The base owns what every optimizer shares, as
Keras 3's does:

- the learning rate, a graph input fed every step (``step_inputs``/``step_values``), so a
  schedule or a changed rate never recompiles; a schedule is evaluated at ``iterations``. A
  constant rate is held, as in Keras 3, in a scalar float32 ``Variable``: ``learning_rate``
  returns it, so a script's ``optimizer.learning_rate.assign(1e-4)``, ``.numpy()`` and
  ``float(...)`` work; with a schedule it returns the rate of the coming update;
- the iteration counter, a Variable incremented in the graph;
- ``clipnorm`` / ``clipvalue`` / ``global_clipnorm`` (at most one);
- decoupled weight decay ``w <- w - lr * weight_decay * w`` before the update (Loshchilov &
  Hutter, https://arxiv.org/abs/1711.05101);
- ``gradient_accumulation_steps=k``: gradients of k micro-batches are summed in slots and one
  update with their mean is applied on every k-th step, which equals one step on a k-times
  larger batch. Unlike Keras 3, schedules and Adam's bias correction count *applied updates*
  (``iterations // k``), not micro-steps, so the equality holds for every optimizer.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from hiapi.hints import LearningRate
from hiapi.graph import Function, Variable, ops, placeholder, step_recording
from hiapi.optimizers import clipping


class Optimizer:
    def __init__(self, learning_rate: LearningRate = 0.001, weight_decay: float | None = None,
                 clipnorm: float | None = None, clipvalue: float | None = None,
                 global_clipnorm: float | None = None,
                 gradient_accumulation_steps: int | None = None, name: str | None = None,
                 **kwargs: Any) -> None:
        if kwargs:
            raise TypeError(f"{type(self).__name__}: unexpected keyword argument(s) "
                            f"{', '.join(sorted(kwargs))}")
        self.name = name or type(self).__name__
        self._learning_rate_variable = Variable(np.float32(0.0), name=f"{self.name}/learning_rate",
                                                trainable=False, autocast=False)
        self.learning_rate = learning_rate
        if sum(c is not None for c in (clipnorm, clipvalue, global_clipnorm)) > 1:
            raise ValueError(f"{self.name}: set at most one of clipnorm, clipvalue and "
                             f"global_clipnorm, got {clipnorm=}, {clipvalue=}, "
                             f"{global_clipnorm=}")
        for arg, value in (("clipnorm", clipnorm), ("clipvalue", clipvalue),
                           ("global_clipnorm", global_clipnorm), ("weight_decay", weight_decay)):
            if value is not None and not value >= 0:
                raise ValueError(f"{self.name}: {arg} must be non-negative, got {value!r}")
        if gradient_accumulation_steps is not None and (
                int(gradient_accumulation_steps) != gradient_accumulation_steps or
                gradient_accumulation_steps < 1):
            raise ValueError(f"{self.name}: gradient_accumulation_steps must be a positive "
                             f"integer, got {gradient_accumulation_steps!r}")
        self.weight_decay = weight_decay
        self.clipnorm, self.clipvalue, self.global_clipnorm = clipnorm, clipvalue, global_clipnorm
        self.gradient_accumulation_steps = gradient_accumulation_steps
        self.iterations = Variable(np.int64(0), name=f"{self.name}/iterations", trainable=False)
        self._slots: dict[tuple[int, str], Variable] = {}     # (id(variable), slot name)
        self._step_inputs = None
        self._eager_updates: dict[tuple[int, ...], Function] = {}    # apply() on arrays
        self.built = False

    # ---- learning rate -----------------------------------------------------------------------
    @property
    def learning_rate(self):
        """Keras 3's ``optimizer.learning_rate``: the Variable holding a constant rate (assign
        to it, or set the attribute: either changes the next step's rate, no recompilation),
        or, under a schedule, the rate the next update will use (a float32 number)."""
        if self._schedule is None:
            return self._learning_rate_variable
        return np.float32(self.current_learning_rate())

    @learning_rate.setter
    def learning_rate(self, value):
        if callable(value) and not isinstance(value, Variable):
            self._schedule = value              # evaluated at each update
            return
        rate = value.numpy() if isinstance(value, Variable) else value
        if np.ndim(rate) != 0 or not np.isreal(rate) or not rate > 0:
            raise ValueError(f"{self.name}: learning_rate must be a positive number or a "
                             f"schedule, got {value!r}")
        self._learning_rate_variable.assign(np.float32(rate))
        self._schedule = None

    @property
    def learning_rate_schedule(self):
        """The schedule the rate follows (``LearningRateSchedule`` or a callable of the update
        index), or None for a constant rate (``learning_rate``'s Variable)."""
        return self._schedule

    def update_index(self):
        """How many updates have been applied (= iterations unless gradients accumulate)."""
        return int(self.iterations.numpy()) // (self.gradient_accumulation_steps or 1)

    def current_learning_rate(self, update_index=None):
        """The rate fed to the graph this step (a schedule is evaluated at ``update_index``)."""
        if self._schedule is None:
            return float(self._learning_rate_variable.storage)
        return float(self._schedule(self.update_index() if update_index is None
                                    else update_index))

    def step_inputs(self):
        """Placeholders the train step takes from the host each step: the learning rate, the
        1-based number of the update being made, and, with gradient accumulation, whether
        this step applies the update."""
        if self._step_inputs is None:
            self._step_inputs = [placeholder((), "float32", name="learning_rate"),
                                 placeholder((), "float64", name="update_number")]
            if self.gradient_accumulation_steps:
                self._step_inputs.append(placeholder((), "bool", name="apply_update"))
        return self._step_inputs

    def step_values(self):
        index = self.update_index()                 # one read of the step counter per step
        values = [self.current_learning_rate(index), float(index + 1)]
        if self.gradient_accumulation_steps:
            step = int(self.iterations.numpy())
            values.append((step + 1) % self.gradient_accumulation_steps == 0)
        return values

    def update_number(self, dtype):
        """The 1-based number of the update being made, as a graph scalar (Adam's t)."""
        return ops.cast(self.step_inputs()[1], dtype)

    # ---- slots -------------------------------------------------------------------------------
    def build(self, variables):
        if self.gradient_accumulation_steps:
            for variable in variables:
                self.add_slot(variable, "accumulated_gradient")
        self.built = True

    def add_slot(self, variable, slot_name, initial=0.0):
        """A Variable shaped like ``variable`` holding per-parameter optimizer state."""
        slot = Variable(np.full(variable.shape, initial, variable.dtype),
                        name=f"{variable.name}/{slot_name}", trainable=False)
        self._slots[(id(variable), slot_name)] = slot
        return slot

    def get_slot(self, variable, slot_name):
        slot = self._slots.get((id(variable), slot_name))
        if slot is None:
            raise ValueError(f"{self.name}: unknown variable {variable.name!r} (shape "
                             f"{variable.shape}): this optimizer can only update the variables "
                             f"it was first built with; create a new optimizer for a new set "
                             f"of variables (a new model), as in Keras")
        return slot

    @property
    def variables(self):
        """Every state Variable: the iteration counter, then the slots in creation order."""
        return [self.iterations] + list(self._slots.values())

    # ---- the update graph --------------------------------------------------------------------
    def scale_loss(self, loss):
        """The loss the train step differentiates: itself (``LossScaleOptimizer`` scales it)."""
        return loss

    def update_step(self, gradient, value, variable, learning_rate):
        """The rule for one parameter: ``(Variable, new_value_Var)`` pairs, the parameter's
        own among them. ``value`` is the parameter's current value (after weight decay)."""
        raise NotImplementedError

    def apply_weight_decay(self, value, variable, learning_rate):
        if not self.weight_decay:
            return value
        return value - value * (learning_rate * self.weight_decay)

    def clip_gradients(self, gradients):
        if self.clipnorm is not None:
            return [clipping.clip_by_norm(g, self.clipnorm) for g in gradients]
        if self.clipvalue is not None:
            return [clipping.clip_by_value(g, self.clipvalue) for g in gradients]
        if self.global_clipnorm is not None:
            return clipping.clip_by_global_norm(gradients, self.global_clipnorm)
        return gradients

    def get_updates(self, gradients, variables):
        """All update pairs of one train step (parameters, slots, the counter)."""
        pairs = [(g, v) for g, v in zip(gradients, variables) if g is not None]
        if not self.built:
            self.build([v for _, v in pairs])
        inputs = self.step_inputs()
        gradients = [g for g, _ in pairs]
        if self.gradient_accumulation_steps:
            apply_now, updates, gradients = self._accumulate(pairs, inputs[2])
        else:
            apply_now, updates = None, []
        gradients = self.clip_gradients(gradients)
        for gradient, (_, variable) in zip(gradients, pairs):
            lr = ops.cast(inputs[0], variable.dtype)
            value = self.apply_weight_decay(variable.read, variable, lr)
            step = self.update_step(gradient, value, variable, lr)
            if variable.constraint is not None:
                step = [(state, variable.constraint(new) if state is variable else new)
                        for state, new in step]
            if apply_now is not None:   # between updates every state keeps its old value
                step = [(state, ops.where(apply_now, new, state.read)) for state, new in step]
            updates += step
        updates.append((self.iterations, self.iterations.read + 1))
        return updates

    # ---- Keras 3's user-facing update: in a custom train_step or a hiapi.function ------------
    def apply(self, grads, trainable_variables=None):
        """Apply ``grads`` to ``trainable_variables`` (Keras 3's ``optimizer.apply``). In a
        traced step (a custom ``train_step``, a ``hiapi.function``) this adds the update ops
        to the step, after averaging the gradients over workers under a data-parallel
        Strategy; on arrays it updates the variables now."""
        grads = list(grads)
        if trainable_variables is None:
            raise ValueError(f"{self.name}.apply: give the variables the gradients are for, "
                             f"apply(grads, model.trainable_variables)")
        variables = list(trainable_variables)
        if len(grads) != len(variables):
            raise ValueError(f"{self.name}.apply: got {len(grads)} gradients for "
                             f"{len(variables)} variables")
        record = step_recording.active()
        if record is None:
            return self._apply_now(grads, variables)
        plan = record.plan
        if plan is not None:
            grads = plan.reduce_gradients(grads, variables, self)
            record.feed(plan, plan.step_inputs(), None)     # the step's worker share
        updates = plan.get_updates(self, grads, variables) if plan is not None else \
            self.get_updates(grads, variables)
        record.feed(self, self.step_inputs(), self.step_values)
        record.add_updates(self, updates)

    def apply_gradients(self, grads_and_vars):
        """tf.keras's form: ``apply_gradients(zip(grads, variables))``."""
        pairs = list(grads_and_vars)
        return self.apply([g for g, _ in pairs], [v for _, v in pairs])

    def _apply_now(self, grads, variables):
        """``apply`` on arrays: one compiled update per set of variables."""
        key = tuple(id(v) for v in variables)
        cached = self._eager_updates.get(key)
        if cached is None:
            holders = [placeholder(v.shape, v.dtype) for v in variables]
            cached = Function(holders + self.step_inputs(), [],
                              self.get_updates(holders, variables), name=f"{self.name}_apply")
            self._eager_updates[key] = cached
        cached(*[np.asarray(g, v.dtype) for g, v in zip(grads, variables)],
               *self.step_values())

    def _accumulate(self, pairs, apply_now):
        steps = self.gradient_accumulation_steps
        updates, means = [], []
        for gradient, variable in pairs:
            slot = self.get_slot(variable, "accumulated_gradient")
            total = slot.read + gradient
            means.append(total / float(steps))
            updates.append((slot, ops.where(apply_now, 0.0, total)))
        return apply_now, updates, means

    def get_config(self) -> dict[str, Any]:
        lr = self._schedule
        if lr is None:
            lr = _shortest_float(self._learning_rate_variable.numpy())
        elif hasattr(lr, "get_config"):
            lr = lr.get_config() | {"class_name": type(lr).__name__}
        return {"name": self.name, "learning_rate": lr, "weight_decay": self.weight_decay,
                "clipnorm": self.clipnorm, "clipvalue": self.clipvalue,
                "global_clipnorm": self.global_clipnorm,
                "gradient_accumulation_steps": self.gradient_accumulation_steps}


def _shortest_float(value):
    """A float32 rate as the shortest decimal that reads back as it (0.001, not Keras's
    0.0010000000474974513): the config then holds the number the script wrote."""
    return float(str(np.float32(value)))
