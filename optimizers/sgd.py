"""Stochastic gradient descent with momentum and Nesterov momentum (Keras's formulation)."""
from __future__ import annotations

from typing import Any

from hiapi.hints import LearningRate
from hiapi.optimizers.optimizer import Optimizer


class SGD(Optimizer):
    """``SGD(learning_rate=0.01, momentum=0.0, nesterov=False, weight_decay=None)``.

    With velocity ``v`` (zero at start), each step, as in Keras::

        v <- momentum * v - lr * g
        w <- w + v                       (nesterov=False)
        w <- w + momentum * v - lr * g   (nesterov=True)

    Sutskever et al., "On the importance of initialization and momentum in deep learning", 2013.
    """

    def __init__(self, learning_rate: LearningRate = 0.01, momentum: float = 0.0,
                 nesterov: bool = False, name: str | None = "SGD", **kwargs: Any) -> None:
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        if not 0.0 <= momentum <= 1.0:
            raise ValueError(f"{self.name}: momentum must be in [0, 1], got {momentum!r}")
        self.momentum = float(momentum)
        self.nesterov = bool(nesterov)

    def build(self, variables):
        if self.momentum:
            for variable in variables:
                self.add_slot(variable, "momentum")
        super().build(variables)

    momentum_applied_elsewhere = False   # set by DGC compression, which keeps the momentum

    def update_step(self, gradient, value, variable, lr):
        if not self.momentum or self.momentum_applied_elsewhere:
            return [(variable, value - lr * gradient)]
        velocity = self.get_slot(variable, "momentum")
        new_velocity = self.momentum * velocity.read - lr * gradient
        if self.nesterov:
            new_value = value + self.momentum * new_velocity - lr * gradient
        else:
            new_value = value + new_velocity
        return [(velocity, new_velocity), (variable, new_value)]

    def get_config(self):
        return {**super().get_config(), "momentum": self.momentum, "nesterov": self.nesterov}
