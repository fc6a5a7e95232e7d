"""Adam and AdamW (Kingma & Ba, https://arxiv.org/abs/1412.6980; Loshchilov & Hutter,
https://arxiv.org/abs/1711.05101), in Keras's formulation, with t the 1-based update number::

    m <- m + (g - m) * (1 - beta_1)
    v <- v + (g^2 - v) * (1 - beta_2)
    v_hat <- max(v_hat, v)                       (amsgrad only; then v_hat replaces v below)
    w <- w - lr * sqrt(1 - beta_2^t) / (1 - beta_1^t) * m / (sqrt(v) + epsilon)

AdamW is Adam with decoupled weight decay (the base optimizer's ``weight_decay``) on by default.
"""
from __future__ import annotations

from typing import Any

from hiapi.hints import LearningRate
from hiapi.graph import ops
from hiapi.optimizers.optimizer import Optimizer


class Adam(Optimizer):
    def __init__(self, learning_rate: LearningRate = 0.001, beta_1: float = 0.9,
                 beta_2: float = 0.999, epsilon: float = 1e-7, amsgrad: bool = False,
                 name: str | None = "adam", **kwargs: Any) -> None:
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        self.beta_1, self.beta_2 = float(beta_1), float(beta_2)
        self.epsilon, self.amsgrad = float(epsilon), bool(amsgrad)

    def build(self, variables):
        for variable in variables:
            self.add_slot(variable, "momentum")
            self.add_slot(variable, "velocity")
            if self.amsgrad:
                self.add_slot(variable, "velocity_hat")
        super().build(variables)

    def update_step(self, gradient, value, variable, lr):
        t = self.update_number(variable.dtype)
        alpha = lr * ops.sqrt(1.0 - ops.power(self.beta_2, t)) / \
            (1.0 - ops.power(self.beta_1, t))
        m, v = self.get_slot(variable, "momentum"), self.get_slot(variable, "velocity")
        new_m = m.read + (gradient - m.read) * (1.0 - self.beta_1)
        new_v = v.read + (ops.square(gradient) - v.read) * (1.0 - self.beta_2)
        updates = [(m, new_m), (v, new_v)]
        if self.amsgrad:
            v_hat = self.get_slot(variable, "velocity_hat")
            new_v = ops.maximum(v_hat.read, new_v)
            updates.append((v_hat, new_v))
        new_value = value - alpha * new_m / (ops.sqrt(new_v) + self.epsilon)
        return updates + [(variable, new_value)]

    def get_config(self):
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2,
                "epsilon": self.epsilon, "amsgrad": self.amsgrad}


class AdamW(Adam):
    def __init__(self, learning_rate: LearningRate = 0.001, weight_decay: float | None = 0.004,
                 beta_1: float = 0.9, beta_2: float = 0.999, epsilon: float = 1e-7,
                 amsgrad: bool = False, name: str | None = "adamw", **kwargs: Any) -> None:
        super().__init__(learning_rate=learning_rate, beta_1=beta_1, beta_2=beta_2,
                         epsilon=epsilon, amsgrad=amsgrad, name=name,
                         weight_decay=weight_decay, **kwargs)
