"""``Masking``: mark the time steps whose features all equal ``mask_value`` as padding.

The output is the input with those steps set to zero, and carries a mask (batch, steps) that
tells the layers downstream (recurrent layers, ``GlobalAveragePooling1D``, losses) to skip
them; see ``hiapi.layers.masks`` for how masks travel::

    model = hiapi.Sequential([hiapi.Input((20, 8)), layers.Masking(0.0), layers.LSTM(16)])
"""
from __future__ import annotations

from typing import Any

from hiapi.graph import ops
from hiapi.layers.layer import Layer


class Masking(Layer):
    def __init__(self, mask_value: float = 0.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.mask_value = mask_value
        self.supports_masking = True

    def _keep(self, inputs):
        """(batch, steps, 1): true where any feature differs from ``mask_value``."""
        differs = ops.cast(ops.not_equal(inputs, self.mask_value), inputs.dtype)
        return ops.greater(ops.max(differs, -1, keepdims=True), 0.0)

    def call(self, inputs, training=None):
        keep = self._keep(inputs)
        outputs = ops.where(keep, inputs, 0.0)
        outputs._keras_mask = ops.squeeze(keep, -1)
        return outputs

    def compute_mask(self, inputs, previous_mask=None):
        return ops.squeeze(self._keep(inputs), -1)

    def get_config(self):
        return {**super().get_config(), "mask_value": self.mask_value}
