"""``Flatten``: keeps the batch axis, merges the rest (a view, no copy)."""
from __future__ import annotations

import math
from typing import Any

from hiapi.hints import DataFormat
from hiapi.graph import ops
from hiapi.layers.data_format import check_data_format
from hiapi.layers.input_spec import InputSpec
from hiapi.layers.layer import Layer


class Flatten(Layer):
    def __init__(self, data_format: DataFormat = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.data_format = check_data_format(self, data_format)
        self.input_spec = InputSpec(min_ndim=1)

    def call(self, inputs, training=None):
        rest = inputs.shape[1:]
        if None in rest:
            raise ValueError(f"Flatten {self.name!r}: all but the batch axis must be known, "
                             f"got input shape {inputs.shape}")
        if self.data_format == "channels_first" and len(rest) > 1:
            inputs = ops.transpose(inputs, (0,) + tuple(range(2, inputs.ndim)) + (1,))
        return ops.reshape(inputs, (-1, math.prod(rest)))

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format}
