"""Learning-rate schedules, evaluated on the host at each step and fed to the graph.

A schedule is a callable ``schedule(step) -> float`` (step = optimizer.iterations), so it never
causes a recompilation. Formulas follow Keras; ``LinearWarmup`` and ``scale_learning_rate`` are
the gradual warmup and linear scaling rule of Goyal et al., "Accurate, Large Minibatch SGD:
Training ImageNet in 1 Hour", 2017 (https://arxiv.org/abs/1706.02677)::

    lr = hiapi.optimizers.schedules.scale_learning_rate(0.1, global_batch=1024, base_batch=256)
    schedule = hiapi.optimizers.schedules.LinearWarmup(
        hiapi.optimizers.schedules.CosineDecay(lr, decay_steps=10_000), warmup_steps=500)
    optimizer = hiapi.optimizers.SGD(learning_rate=schedule, momentum=0.9)
"""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence


class LearningRateSchedule:
    def __call__(self, step: int) -> float:
        raise NotImplementedError

    def get_config(self) -> dict[str, Any]:
        return {k: (v.get_config() | {"class_name": type(v).__name__}
                    if isinstance(v, LearningRateSchedule) else v)
                for k, v in vars(self).items()}

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({args})"


class ExponentialDecay(LearningRateSchedule):
    """``initial * decay_rate ** (step / decay_steps)`` (the exponent floored if staircase)."""

    def __init__(self, initial_learning_rate: float, decay_steps: int, decay_rate: float,
                 staircase: bool = False, name: str = "ExponentialDecay") -> None:
        _positive("decay_steps", decay_steps)
        self.initial_learning_rate, self.decay_steps = initial_learning_rate, decay_steps
        self.decay_rate, self.staircase, self.name = decay_rate, staircase, name

    def __call__(self, step: int) -> float:
        p = step / self.decay_steps
        return self.initial_learning_rate * self.decay_rate ** (math.floor(p)
                                                                if self.staircase else p)


class PiecewiseConstantDecay(LearningRateSchedule):
    """``values[0]`` while step <= boundaries[0], ``values[i]`` while step <= boundaries[i],
    ``values[-1]`` after the last boundary."""

    def __init__(self, boundaries: Sequence[int], values: Sequence[float],
                 name: str = "PiecewiseConstant") -> None:
        if len(values) != len(boundaries) + 1:
            raise ValueError(f"PiecewiseConstantDecay: values needs one more entry than "
                             f"boundaries, got {len(boundaries)} boundaries and "
                             f"{len(values)} values")
        if list(boundaries) != sorted(boundaries):
            raise ValueError(f"PiecewiseConstantDecay: boundaries must increase, got "
                             f"{boundaries}")
        self.boundaries, self.values, self.name = list(boundaries), list(values), name

    def __call__(self, step: int) -> float:
        for boundary, value in zip(self.boundaries, self.values):
            if step <= boundary:
                return value
        return self.values[-1]


class PolynomialDecay(LearningRateSchedule):
    """``(initial - end) * (1 - step / decay_steps) ** power + end``; with ``cycle`` the decay
    restarts with decay_steps multiplied by ceil(step / decay_steps)."""

    def __init__(self, initial_learning_rate: float, decay_steps: int,
                 end_learning_rate: float = 0.0001, power: float = 1.0, cycle: bool = False,
                 name: str = "PolynomialDecay") -> None:
        _positive("decay_steps", decay_steps)
        self.initial_learning_rate, self.decay_steps = initial_learning_rate, decay_steps
        self.end_learning_rate, self.power, self.cycle = end_learning_rate, power, cycle
        self.name = name

    def __call__(self, step: int) -> float:
        decay_steps = self.decay_steps
        if self.cycle:
            decay_steps = decay_steps * max(1, math.ceil(step / decay_steps))
        else:
            step = min(step, decay_steps)
        fraction = 1 - step / decay_steps
        return (self.initial_learning_rate - self.end_learning_rate) * fraction ** self.power + \
            self.end_learning_rate


class CosineDecay(LearningRateSchedule):
    """Cosine decay from ``initial`` (or, after a linear warmup from ``initial`` to
    ``warmup_target`` over ``warmup_steps``, from ``warmup_target``) down to ``alpha`` times
    that value over ``decay_steps`` (Loshchilov & Hutter, SGDR, https://arxiv.org/abs/1608.03983).
    """

    def __init__(self, initial_learning_rate: float, decay_steps: int, alpha: float = 0.0,
                 name: str = "CosineDecay", warmup_target: float | None = None,
                 warmup_steps: int = 0) -> None:
        _positive("decay_steps", decay_steps)
        self.initial_learning_rate, self.decay_steps, self.alpha = \
            initial_learning_rate, decay_steps, alpha
        self.name, self.warmup_target, self.warmup_steps = name, warmup_target, warmup_steps

    def __call__(self, step: int) -> float:
        if self.warmup_target is None:
            peak, step = self.initial_learning_rate, step
        elif step < self.warmup_steps:
            return self.initial_learning_rate + (self.warmup_target -
                                                 self.initial_learning_rate) * \
                step / self.warmup_steps
        else:
            peak, step = self.warmup_target, step - self.warmup_steps
        step = min(step, self.decay_steps)
        cosine = 0.5 * (1 + math.cos(math.pi * step / self.decay_steps))
        return peak * ((1 - self.alpha) * cosine + self.alpha)


class LinearWarmup(LearningRateSchedule):
    """Gradual warmup (Goyal et al.): the rate rises linearly from ``initial_learning_rate`` to
    the wrapped schedule's value at ``warmup_steps`` over the first ``warmup_steps`` steps, then
    follows the wrapped schedule (evaluated at the true step, so the two meet without a jump).
    ``schedule`` may be a number for a constant rate after warmup."""

    def __init__(self, schedule: LearningRateSchedule | Callable[[int], float] | float,
                 warmup_steps: int, initial_learning_rate: float = 0.0) -> None:
        _positive("warmup_steps", warmup_steps)
        self.schedule, self.warmup_steps = schedule, warmup_steps
        self.initial_learning_rate = initial_learning_rate

    def _target(self, step):
        return self.schedule(step) if callable(self.schedule) else self.schedule

    def __call__(self, step: int) -> float:
        if step >= self.warmup_steps:
            return self._target(step)
        target = self._target(self.warmup_steps)
        return self.initial_learning_rate + (target - self.initial_learning_rate) * \
            step / self.warmup_steps


def scale_learning_rate(base_learning_rate: float, global_batch: int,
                        base_batch: int = 256) -> float:
    """Linear scaling rule (Goyal et al.): ``base_lr * global_batch / base_batch``.

    >>> scale_learning_rate(0.1, global_batch=1024, base_batch=256)
    0.4
    """
    _positive("global_batch", global_batch)
    _positive("base_batch", base_batch)
    return base_learning_rate * global_batch / base_batch


def _positive(name, value):
    if not value > 0:
        raise ValueError(f"{name} must be positive, got {value!r}")


_BY_NAME = {cls.__name__: cls for cls in (ExponentialDecay, PiecewiseConstantDecay,
                                          PolynomialDecay, CosineDecay, LinearWarmup)}


def deserialize(config):
    """A schedule from ``get_config()`` output (with its ``class_name``)."""
    config = dict(config)
    cls = _BY_NAME[config.pop("class_name")]
    for key, value in config.items():
        if isinstance(value, dict) and "class_name" in value:
            config[key] = deserialize(value)
    return cls(**config)
