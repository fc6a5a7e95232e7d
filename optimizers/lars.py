"""LARS: layer-wise adaptive rate scaling (You, Gitman & Ginsburg, "Large Batch Training of
Convolutional Networks", 2017, https://arxiv.org/abs/1708.03888).

Each parameter tensor (a layer's kernel) gets its own rate, the trust ratio
``eta * ||w|| / (||g|| + beta * ||w|| + epsilon)``, and weight decay beta is coupled into the
gradient, as in the paper's algorithm::

    g' <- trust_ratio * (g + beta * w)
    v  <- momentum * v - lr * g'           (then SGD's rule, Nesterov included)
    w  <- w + v

So LARS is SGD with a transformed gradient: it reuses SGD's update path and adds only the trust
ratio. Excluded parameters (by default the 1-D ones: biases and normalization scales/offsets,
as is usual for LARS) get neither the ratio nor the weight decay. Where ``||w||`` or ``||g||``
is zero the ratio is 1.
"""
from __future__ import annotations

from typing import Any, Literal, Sequence

from hiapi.hints import LearningRate
from hiapi.graph import ops
from hiapi.optimizers.clipping import l2_norm
from hiapi.optimizers.sgd import SGD


class LARS(SGD):
    def __init__(self, learning_rate: LearningRate = 0.01, momentum: float = 0.9,
                 weight_decay: float = 0.0, trust_coefficient: float = 0.001, epsilon: float = 0.0,
                 nesterov: bool = False,
                 exclude_from_layer_adaptation: Literal["1d"] | Sequence[str] | None = "1d",
                 name: str | None = "LARS", **kwargs: Any) -> None:
        super().__init__(learning_rate=learning_rate, momentum=momentum, nesterov=nesterov,
                         name=name, **kwargs)
        if trust_coefficient < 0:
            raise ValueError(f"LARS: trust_coefficient must be >= 0, got {trust_coefficient!r}")
        self.lars_weight_decay = float(weight_decay or 0.0)
        self.weight_decay = None          # coupled into the gradient below, not decoupled
        self.trust_coefficient = float(trust_coefficient)
        self.epsilon = float(epsilon)
        self.exclude_from_layer_adaptation = exclude_from_layer_adaptation

    def excluded(self, variable):
        """True for parameters that keep the plain SGD update."""
        rule = self.exclude_from_layer_adaptation
        if rule == "1d":
            return len(variable.shape) <= 1
        return any(pattern in variable.name for pattern in (rule or ()))

    def trust_ratio(self, gradient, value):
        w_norm, g_norm = l2_norm(value), l2_norm(gradient)
        ratio = self.trust_coefficient * w_norm / (
            g_norm + self.lars_weight_decay * w_norm + self.epsilon)
        return ops.where(ops.greater(w_norm * g_norm, 0), ratio, 1.0)

    def update_step(self, gradient, value, variable, lr):
        if not self.excluded(variable) and self.trust_coefficient:
            ratio = self.trust_ratio(gradient, value)      # from the raw gradient
            if self.lars_weight_decay:
                gradient = gradient + self.lars_weight_decay * value
            gradient = ratio * gradient
        return super().update_step(gradient, value, variable, lr)

    def get_config(self):
        return {**super().get_config(), "weight_decay": self.lars_weight_decay,
                "trust_coefficient": self.trust_coefficient, "epsilon": self.epsilon,
                "exclude_from_layer_adaptation": self.exclude_from_layer_adaptation}
