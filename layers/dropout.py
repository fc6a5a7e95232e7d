"""``Dropout``: zero a fraction ``rate`` of the inputs in training and scale the rest by
1 / (1 - rate) (Srivastava et al. 2014); the identity in inference.

The mask comes from the counter-based ``random_uniform`` op: seed (the layer's, drawn from the
global seed unless given) and a step counter that the training graph increments, so masks are
reproducible for a seed and differ at every step.
"""
from __future__ import annotations

from typing import Any

from hiapi.hints import ShapeLike
from hiapi.graph import ops
from hiapi.layers.seeded import SeededLayer


class Dropout(SeededLayer):
    def __init__(self, rate: float, noise_shape: ShapeLike | None = None, seed: int | None = None,
                 **kwargs: Any) -> None:
        super().__init__(seed=seed, **kwargs)
        if not 0.0 <= rate < 1.0:
            raise ValueError(f"Dropout {self.name!r}: rate must be in [0, 1), got {rate!r}")
        self.rate, self.noise_shape = float(rate), noise_shape
        self.supports_masking = True

    def call(self, inputs, training=None):
        if not training or self.rate == 0.0:
            return inputs
        self.add_update(self.counter, self.counter.read + 1)
        return ops.dropout(inputs, self.rate, self.seed, self.counter.read, self.noise_shape)

    def get_config(self):
        return {**super().get_config(), "rate": self.rate, "noise_shape": self.noise_shape,
                "seed": self.seed}
