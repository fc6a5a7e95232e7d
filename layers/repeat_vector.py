"""``RepeatVector``: (batch, features) -> (batch, n, features)."""
from __future__ import annotations

from typing import Any

import numpy as np

from hiapi.graph import ops
from hiapi.layers.input_spec import InputSpec
from hiapi.layers.layer import Layer


class RepeatVector(Layer):
    """``RepeatVector(n)``: (batch, features) -> (batch, n, features), the input repeated n
    times (e.g. to feed an encoder's summary to every step of a decoder RNN)."""

    def __init__(self, n: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not isinstance(n, (int, np.integer)) or n <= 0:
            raise ValueError(f"RepeatVector {self.name!r}: n must be a positive integer, "
                             f"got {n!r}")
        self.n = int(n)
        self.input_spec = InputSpec(ndim=2)

    def call(self, inputs, training=None):
        ones = ops.constant(np.ones((1, self.n, 1), inputs.dtype))
        return ops.expand_dims(inputs, 1) * ones

    def get_config(self):
        return {**super().get_config(), "n": self.n}
