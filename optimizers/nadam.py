"""Nadam: Adam with Nesterov momentum (Dozat 2016,
https://openreview.net/pdf/OM0jvwB8jIp57ZJjtNEZ.pdf), in Keras's formulation with the momentum
schedule ``mu_t = beta_1 * (1 - 0.5 * 0.96^(0.004 t))``, t the 1-based update number::

    prod_t <- prod_{t-1} * mu_t                  (one scalar for all parameters, starts at 1)
    m <- m + (g - m) * (1 - beta_1)
    v <- v + (g^2 - v) * (1 - beta_2)
    m_hat = mu_{t+1} * m / (1 - prod_t * mu_{t+1}) + (1 - mu_t) * g / (1 - prod_t)
    w <- w - lr * m_hat / (sqrt(v / (1 - beta_2^t)) + epsilon)

    optimizer = hiapi.optimizers.Nadam(learning_rate=0.002)
"""
from __future__ import annotations

from typing import Any

import numpy as np

from hiapi.hints import LearningRate
from hiapi.graph import Variable, ops
from hiapi.optimizers.optimizer import Optimizer


class Nadam(Optimizer):
    def __init__(self, learning_rate: LearningRate = 0.001, beta_1: float = 0.9,
                 beta_2: float = 0.999, epsilon: float = 1e-7, name: str | None = "nadam",
                 **kwargs: Any) -> None:
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        self.beta_1, self.beta_2, self.epsilon = float(beta_1), float(beta_2), float(epsilon)
        self._u_product = None

    def build(self, variables):
        for variable in variables:
            self.add_slot(variable, "momentum")
            self.add_slot(variable, "velocity")
        # the running product of the momentum schedule is state, saved with the slots
        dtype = variables[0].dtype if variables else np.float32
        self._u_product = Variable(np.ones((), dtype), name=f"{self.name}/u_product",
                                   trainable=False)
        self._slots[(None, "u_product")] = self._u_product
        self._first = id(variables[0]) if variables else None
        super().build(variables)

    def _mu(self, t):
        return self.beta_1 * (1.0 - 0.5 * ops.power(0.96, t * 0.004))

    def update_step(self, gradient, value, variable, lr):
        t = self.update_number(variable.dtype)
        mu_t, mu_next = self._mu(t), self._mu(t + 1.0)
        product = ops.cast(self._u_product.read, variable.dtype) * mu_t
        m, v = self.get_slot(variable, "momentum"), self.get_slot(variable, "velocity")
        new_m = m.read + (gradient - m.read) * (1.0 - self.beta_1)
        new_v = v.read + (ops.square(gradient) - v.read) * (1.0 - self.beta_2)
        m_hat = mu_next * new_m / (1.0 - product * mu_next) + \
            (1.0 - mu_t) * gradient / (1.0 - product)
        v_hat = new_v / (1.0 - ops.power(self.beta_2, t))
        updates = [(m, new_m), (v, new_v),
                   (variable, value - lr * m_hat / (ops.sqrt(v_hat) + self.epsilon))]
        if id(variable) == self._first:          # the shared product advances once per step
            updates.append((self._u_product, product))
        return updates

    def get_config(self):
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2,
                "epsilon": self.epsilon}
