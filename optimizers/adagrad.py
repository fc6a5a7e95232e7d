"""Adagrad (Duchi, Hazan & Singer, JMLR 2011), in Keras's formulation::

    acc <- acc + g^2                     (acc starts at initial_accumulator_value)
    w   <- w - lr * g / sqrt(acc + epsilon)
"""
from __future__ import annotations

from typing import Any

from hiapi.hints import LearningRate
from hiapi.graph import ops
from hiapi.optimizers.optimizer import Optimizer


class Adagrad(Optimizer):
    def __init__(self, learning_rate: LearningRate = 0.001, initial_accumulator_value: float = 0.1,
                 epsilon: float = 1e-7, name: str | None = "adagrad", **kwargs: Any) -> None:
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        self.initial_accumulator_value = float(initial_accumulator_value)
        self.epsilon = float(epsilon)

    def build(self, variables):
        for variable in variables:
            self.add_slot(variable, "accumulator", self.initial_accumulator_value)
        super().build(variables)

    def update_step(self, gradient, value, variable, lr):
        accumulator = self.get_slot(variable, "accumulator")
        new_accumulator = accumulator.read + ops.square(gradient)
        new_value = value - lr * gradient / ops.sqrt(new_accumulator + self.epsilon)
        return [(accumulator, new_accumulator), (variable, new_value)]

    def get_config(self):
        return {**super().get_config(),
                "initial_accumulator_value": self.initial_accumulator_value,
                "epsilon": self.epsilon}
