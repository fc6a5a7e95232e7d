"""RMSprop (Hinton, Coursera lecture 6e), in Keras's formulation::

    v <- rho * v + (1 - rho) * g^2
    a <- rho * a + (1 - rho) * g          (centered only; denominator v - a^2)
    step <- lr * g / sqrt(v + epsilon)    (or sqrt(v - a^2 + epsilon) when centered)
    m <- momentum * m + step; w <- w - m   (momentum > 0), else w <- w - step
"""
from __future__ import annotations

from typing import Any

from hiapi.hints import LearningRate
from hiapi.graph import ops
from hiapi.optimizers.optimizer import Optimizer


class RMSprop(Optimizer):
    def __init__(self, learning_rate: LearningRate = 0.001, rho: float = 0.9, momentum: float = 0.0,
                 epsilon: float = 1e-7, centered: bool = False, name: str | None = "rmsprop",
                 **kwargs: Any) -> None:
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        self.rho, self.momentum = float(rho), float(momentum)
        self.epsilon, self.centered = float(epsilon), bool(centered)

    def build(self, variables):
        for variable in variables:
            self.add_slot(variable, "velocity")
            if self.momentum:
                self.add_slot(variable, "momentum")
            if self.centered:
                self.add_slot(variable, "average_gradient")
        super().build(variables)

    def update_step(self, gradient, value, variable, lr):
        velocity = self.get_slot(variable, "velocity")
        new_velocity = self.rho * velocity.read + (1.0 - self.rho) * ops.square(gradient)
        updates = [(velocity, new_velocity)]
        denominator = new_velocity
        if self.centered:
            average = self.get_slot(variable, "average_gradient")
            new_average = self.rho * average.read + (1.0 - self.rho) * gradient
            updates.append((average, new_average))
            denominator = new_velocity - ops.square(new_average)
        step = lr * gradient / ops.sqrt(denominator + self.epsilon)
        if self.momentum:
            momentum = self.get_slot(variable, "momentum")
            step = self.momentum * momentum.read + step
            updates.append((momentum, step))
        return updates + [(variable, value - step)]

    def get_config(self):
        return {**super().get_config(), "rho": self.rho, "momentum": self.momentum,
                "epsilon": self.epsilon, "centered": self.centered}
