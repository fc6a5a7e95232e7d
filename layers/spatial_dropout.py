"""``SpatialDropout1D/2D/3D``: dropout of whole feature maps (Tompson et al. 2015,
https://arxiv.org/abs/1411.4280). Neighbouring pixels of a convolutional feature map are
strongly correlated, so dropping single values barely regularises; dropping a channel for the
whole sample does. Training only; the identity at inference; the mask comes from ``Dropout``'s
seeded counter-based random numbers."""
from __future__ import annotations

from typing import Any

from hiapi.hints import DataFormat
from hiapi.layers.data_format import check_data_format
from hiapi.layers.dropout import Dropout
from hiapi.layers.input_spec import InputSpec


class _SpatialDropout(Dropout):
    rank = 1

    def __init__(self, rate: float, seed: int | None = None, data_format: DataFormat = None,
                 **kwargs: Any) -> None:
        super().__init__(rate, seed=seed, **kwargs)
        self.data_format = check_data_format(self, data_format)
        self.input_spec = InputSpec(ndim=self.rank + 2)

    def call(self, inputs, training=None):
        ones = (1,) * self.rank
        # one value per (sample, channel), shared over the spatial axes
        self.noise_shape = (None, None) + ones if self.data_format == "channels_first" \
            else (None,) + ones + (None,)
        return super().call(inputs, training)

    def get_config(self):
        config = {**super().get_config(), "data_format": self.data_format}
        del config["noise_shape"]
        return config


class SpatialDropout1D(_SpatialDropout):
    """Drops whole channels of (batch, steps, channels) inputs."""
    rank = 1

    def __init__(self, rate: float, seed: int | None = None, **kwargs: Any) -> None:
        super().__init__(rate, seed=seed, **kwargs)

    def get_config(self):
        config = super().get_config()
        del config["data_format"]
        return config


class SpatialDropout2D(_SpatialDropout):
    """Drops whole channels of (batch, rows, cols, channels) inputs (or channels_first)."""
    rank = 2


class SpatialDropout3D(_SpatialDropout):
    """Drops whole channels of (batch, d1, d2, d3, channels) inputs (or channels_first)."""
    rank = 3
