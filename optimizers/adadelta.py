"""Adadelta (Zeiler 2012, https://arxiv.org/abs/1212.5701), in Keras's formulation::

    acc_g  <- rho * acc_g + (1 - rho) * g^2
    delta  <- -sqrt(acc_dx + epsilon) / sqrt(acc_g + epsilon) * g
    acc_dx <- rho * acc_dx + (1 - rho) * delta^2
    w      <- w + lr * delta

The ratio of the two running RMS values gives each parameter a step in its own units, which is
why Keras keeps a learning rate (default 0.001) that the paper sets to 1.

    optimizer = hiapi.optimizers.Adadelta(learning_rate=1.0, rho=0.95)
"""
from __future__ import annotations

from typing import Any

from hiapi.hints import LearningRate
from hiapi.graph import ops
from hiapi.optimizers.optimizer import Optimizer


class Adadelta(Optimizer):
    def __init__(self, learning_rate: LearningRate = 0.001, rho: float = 0.95,
                 epsilon: float = 1e-7, name: str | None = "adadelta", **kwargs: Any) -> None:
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        if not 0.0 <= rho < 1.0:
            raise ValueError(f"Adadelta: rho must be in [0, 1), got {rho!r}")
        self.rho, self.epsilon = float(rho), float(epsilon)

    def build(self, variables):
        for variable in variables:
            self.add_slot(variable, "accumulated_grad")
            self.add_slot(variable, "accumulated_delta_var")
        super().build(variables)

    def update_step(self, gradient, value, variable, lr):
        rho = self.rho
        acc_g = self.get_slot(variable, "accumulated_grad")
        acc_dx = self.get_slot(variable, "accumulated_delta_var")
        new_acc_g = rho * acc_g.read + (1.0 - rho) * ops.square(gradient)
        delta = -ops.sqrt(acc_dx.read + self.epsilon) / ops.sqrt(new_acc_g + self.epsilon) * \
            gradient
        new_acc_dx = rho * acc_dx.read + (1.0 - rho) * ops.square(delta)
        return [(acc_g, new_acc_g), (acc_dx, new_acc_dx), (variable, value + lr * delta)]

    def get_config(self):
        return {**super().get_config(), "rho": self.rho, "epsilon": self.epsilon}
