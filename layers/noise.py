"""``GaussianNoise`` and ``GaussianDropout``: training-only regularisation by random noise,
the identity at inference.

The noise is hiapi's counter-based ``random_normal`` (Box-Muller on the ``random_uniform``
streams): seeded by the layer's seed (drawn from the global seed unless given) and a step
counter the training graph increments, so it is reproducible under
``hiapi.utils.set_random_seed`` and fresh at every step, on every backend.
"""
from __future__ import annotations

import math
from typing import Any

from hiapi.graph import ops
from hiapi.layers.seeded import SeededLayer


class _NoiseLayer(SeededLayer):
    supports_masking = True       # noise per element: the padding stays where it was

    def _normal(self, like):
        noise = ops.random_normal(like, self.seed, self.counter.read)
        self.add_update(self.counter, self.counter.read + 1)
        return ops.cast(noise, like.dtype)

    def _check_unit(self, name, value, upper_open=False):
        if not isinstance(value, (int, float)) or not (0 <= value < 1 if upper_open
                                                       else 0 <= value <= 1):
            interval = "[0, 1)" if upper_open else "[0, 1]"
            raise ValueError(f"{type(self).__name__} {self.name!r}: {name} must be a number in "
                             f"{interval}, got {value!r}")
        return float(value)


class GaussianNoise(_NoiseLayer):
    """Adds zero-mean normal noise of standard deviation ``stddev`` in training (a
    regulariser, and a way to augment real-valued inputs)."""

    def __init__(self, stddev: float, seed: int | None = None, **kwargs: Any) -> None:
        super().__init__(seed=seed, **kwargs)
        self.stddev = self._check_unit("stddev", stddev)

    def call(self, inputs, training=None):
        if not training or self.stddev == 0:
            return inputs
        return inputs + self._normal(inputs) * self.stddev

    def get_config(self):
        return {**super().get_config(), "stddev": self.stddev, "seed": self.seed}


class GaussianDropout(_NoiseLayer):
    """Multiplies by normal noise of mean 1 and standard deviation sqrt(rate / (1 - rate))
    in training: dropout's multiplicative noise with the same variance, without zeros
    (Srivastava et al. 2014, section 10)."""

    def __init__(self, rate: float, seed: int | None = None, **kwargs: Any) -> None:
        super().__init__(seed=seed, **kwargs)
        self.rate = self._check_unit("rate", rate, upper_open=True)

    def call(self, inputs, training=None):
        if not training or self.rate == 0:
            return inputs
        return inputs * (self._normal(inputs) * math.sqrt(self.rate / (1.0 - self.rate)) + 1.0)

    def get_config(self):
        return {**super().get_config(), "rate": self.rate, "seed": self.seed}
