"""Adamax (Kingma & Ba, https://arxiv.org/abs/1412.6980, section 7.1): Adam with the infinity
norm in place of the second moment, in Keras's formulation, t the 1-based update number::

    m <- m + (g - m) * (1 - beta_1)
    u <- max(beta_2 * u, |g|)
    w <- w - lr * m / ((1 - beta_1^t) * (u + epsilon))

    optimizer = hiapi.optimizers.Adamax(learning_rate=0.002)
"""
from __future__ import annotations

from typing import Any

from hiapi.hints import LearningRate
from hiapi.graph import ops
from hiapi.optimizers.optimizer import Optimizer


class Adamax(Optimizer):
    def __init__(self, learning_rate: LearningRate = 0.001, beta_1: float = 0.9,
                 beta_2: float = 0.999, epsilon: float = 1e-7, name: str | None = "adamax",
                 **kwargs: Any) -> None:
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        self.beta_1, self.beta_2, self.epsilon = float(beta_1), float(beta_2), float(epsilon)

    def build(self, variables):
        for variable in variables:
            self.add_slot(variable, "momentum")
            self.add_slot(variable, "norm")
        super().build(variables)

    def update_step(self, gradient, value, variable, lr):
        t = self.update_number(variable.dtype)
        m, u = self.get_slot(variable, "momentum"), self.get_slot(variable, "norm")
        new_m = m.read + (gradient - m.read) * (1.0 - self.beta_1)
        new_u = ops.maximum(self.beta_2 * u.read, ops.abs(gradient))
        step = lr * new_m / ((1.0 - ops.power(self.beta_1, t)) * (new_u + self.epsilon))
        return [(m, new_m), (u, new_u), (variable, value - step)]

    def get_config(self):
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2,
                "epsilon": self.epsilon}
