"""``LossScaleOptimizer``: dynamic loss scaling for float16 training (Keras 3's class).

float16 represents magnitudes down to about 6e-8; small gradients of a float16 backward pass
round to zero. The loss is multiplied by a scale ``S`` before differentiation, so every gradient
in the backward pass is ``S`` times larger, and the float32 gradients of the variables are
divided by ``S`` before the inner optimizer's update (Micikevicius et al. 2018,
https://arxiv.org/abs/1710.03740, section 3.2). ``S`` is found at run time, all inside the
compiled step:

- a step whose gradients are not all finite (the scale overflowed float16) is skipped: every
  variable, optimizer slot and the iteration counter keep their values, and ``S`` is halved;
- after ``dynamic_growth_steps`` finite steps in a row ``S`` is doubled.

``compile`` wraps the optimizer in one when the model has a float16 layer, as Keras does
(bfloat16 has float32's range and needs none)::

    hiapi.mixed_precision.set_global_policy("mixed_float16")
    model.compile(optimizer="adam", loss=...)     # model.optimizer is a LossScaleOptimizer
"""
from __future__ import annotations

from typing import Any

import numpy as np

from hiapi.graph import Variable, ops
from hiapi.optimizers.optimizer import Optimizer

_OWN = frozenset({"inner_optimizer", "initial_scale", "dynamic_growth_steps", "dynamic_scale",
                  "step_counter", "name", "agree_on_total", "_scale_built"})


class LossScaleOptimizer(Optimizer):
    """``inner_optimizer`` with dynamic loss scaling; every other attribute (learning rate,
    iterations, slots, config) is the inner optimizer's, so schedules, callbacks and saving
    see the optimizer they know."""

    def __init__(self, inner_optimizer: Optimizer, initial_scale: float = 2.0 ** 15,
                 dynamic_growth_steps: int = 2000, name: str | None = None,
                 **kwargs: Any) -> None:
        if kwargs:
            raise TypeError(f"LossScaleOptimizer: unexpected keyword argument(s) "
                            f"{', '.join(sorted(kwargs))}")
        if not isinstance(inner_optimizer, Optimizer) or \
                isinstance(inner_optimizer, LossScaleOptimizer):
            raise ValueError(f"LossScaleOptimizer: inner_optimizer must be an optimizer "
                             f"instance (not a LossScaleOptimizer), got {inner_optimizer!r}")
        if isinstance(initial_scale, bool) or not isinstance(
                initial_scale, (int, float, np.integer, np.floating)) or \
                not 0 < float(initial_scale) < np.inf:
            raise ValueError(f"LossScaleOptimizer: initial_scale must be a positive finite "
                             f"number, got {initial_scale!r}")
        if isinstance(dynamic_growth_steps, bool) or not isinstance(
                dynamic_growth_steps, (int, np.integer)) or dynamic_growth_steps < 1:
            raise ValueError(f"LossScaleOptimizer: dynamic_growth_steps must be a positive "
                             f"integer, got {dynamic_growth_steps!r}")
        own = {"inner_optimizer": inner_optimizer, "initial_scale": float(initial_scale),
               "dynamic_growth_steps": int(dynamic_growth_steps),
               "name": name or "loss_scale_optimizer",
               # a Strategy sets this: the finite check summed over workers, so all skip alike
               "agree_on_total": None}
        for key, value in own.items():
            object.__setattr__(self, key, value)
        object.__setattr__(self, "dynamic_scale", Variable(
            np.float32(initial_scale), name=f"{self.name}/dynamic_scale", trainable=False))
        object.__setattr__(self, "step_counter", Variable(
            np.int64(0), name=f"{self.name}/step_counter", trainable=False))

    # every attribute but the loss scale's own is the inner optimizer's
    def __getattr__(self, name):
        if name.startswith("__") or name == "inner_optimizer":
            raise AttributeError(name)
        return getattr(self.inner_optimizer, name)

    def __setattr__(self, name, value):
        if name in _OWN:
            object.__setattr__(self, name, value)
        else:
            setattr(self.inner_optimizer, name, value)

    @property
    def learning_rate(self):
        return self.inner_optimizer.learning_rate

    @learning_rate.setter
    def learning_rate(self, value):
        self.inner_optimizer.learning_rate = value

    @property
    def variables(self):
        """The inner optimizer's state, then the scale and the count of good steps."""
        return self.inner_optimizer.variables + [self.dynamic_scale, self.step_counter]

    def scale_loss(self, loss):
        """The loss times the current scale (what the step differentiates)."""
        return loss * ops.cast(self.dynamic_scale.read, loss.dtype)

    def get_updates(self, gradients, variables):
        """The inner optimizer's updates on unscaled gradients, each kept only when every
        gradient is finite; the scale and counter updates."""
        total = None         # a ZeRO rank may own no gradient: its total is 0
        for g in gradients:
            if g is not None:
                part = ops.cast(ops.sum(g), "float32")
                total = part if total is None else total + part
        total = ops.constant(np.float32(0)) if total is None else total
        if self.agree_on_total is not None:
            total = self.agree_on_total(total)
        # |sum| <= max is False for inf and NaN: one scalar test covers every gradient
        finite = ops.less_equal(ops.abs(total), np.float32(np.finfo(np.float32).max))
        scale = self.dynamic_scale.read
        unscaled = [None if g is None else g * ops.cast(1.0 / scale, g.dtype) for g in gradients]
        updates = [(state, ops.where(finite, new, state.read))
                   for state, new in self.inner_optimizer.get_updates(unscaled, variables)]
        counter = self.step_counter.read
        grow = ops.greater_equal(counter + 1, self.dynamic_growth_steps)
        new_scale = ops.where(finite, ops.where(grow, scale * 2.0, scale), scale * 0.5)
        new_counter = ops.where(finite, ops.where(grow, 0, counter + 1), 0)
        return updates + [(self.dynamic_scale, new_scale),
                          (self.step_counter, ops.cast(new_counter, counter.dtype))]

    def get_config(self) -> dict[str, Any]:
        return {"name": self.name, "inner_optimizer": {
                    "class_name": type(self.inner_optimizer).__name__,
                    "config": self.inner_optimizer.get_config()},
                "initial_scale": self.initial_scale,
                "dynamic_growth_steps": self.dynamic_growth_steps}

    def __repr__(self):
        return f"<LossScaleOptimizer of {self.inner_optimizer!r}>"


def _delegate(name):
    def method(self, *args, **kwargs):
        return getattr(self.inner_optimizer, name)(*args, **kwargs)
    method.__name__ = name
    method.__doc__ = f"The inner optimizer's ``{name}``."
    return method


# the base class's methods that belong to the inner optimizer (``apply`` and
# ``apply_gradients`` stay the base's: they call this class's ``get_updates``)
for _name in ("update_index", "current_learning_rate", "step_inputs", "step_values",
              "update_number", "build", "add_slot", "get_slot", "update_step",
              "apply_weight_decay", "clip_gradients", "_accumulate"):
    setattr(LossScaleOptimizer, _name, _delegate(_name))
