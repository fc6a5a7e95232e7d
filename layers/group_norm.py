"""``GroupNormalization`` (Wu & He 2018, https://arxiv.org/abs/1803.08494): normalise each
sample over groups of channels (and all other non-batch axes), independent of the batch size,
so it works with the tiny per-device batches where batch norm's statistics are noise.
``groups=1`` is layer norm over all features; ``groups=-1`` (one channel per group) is instance
norm. Weights ``gamma`` and ``beta`` have one entry per channel, as in Keras."""
from __future__ import annotations

from typing import Any

from hiapi.graph import ops
from hiapi.layers.normalization import _Normalization, in_float32, moments


class GroupNormalization(_Normalization):
    """``GroupNormalization(groups=8)`` on (batch, ..., channels) inputs."""
    supports_masking = True

    def __init__(self, groups: int = 32, axis: int = -1, epsilon: float = 1e-3, center: bool = True,
                 scale: bool = True, **kwargs: Any) -> None:
        super().__init__(axis=axis, epsilon=epsilon, center=center, scale=scale, **kwargs)
        if not isinstance(axis, int):
            raise ValueError(f"GroupNormalization {self.name!r}: axis must be one int, got "
                             f"{axis!r}")
        if not isinstance(groups, int) or (groups <= 0 and groups != -1):
            raise ValueError(f"GroupNormalization {self.name!r}: groups must be a positive "
                             f"integer or -1, got {groups!r}")
        self.groups = groups

    def build(self, input_shape):
        axis = self.axis % len(input_shape)
        if axis == 0:
            raise ValueError(f"GroupNormalization {self.name!r}: axis {self.axis} is the batch "
                             f"axis of input shape {input_shape}")
        channels = input_shape[axis]
        if channels is None:
            raise ValueError(f"GroupNormalization {self.name!r}: axis {self.axis} of input "
                             f"shape {input_shape} must have a known size")
        groups = channels if self.groups == -1 else self.groups
        if groups > channels or channels % groups:
            raise ValueError(f"GroupNormalization {self.name!r}: {channels} channels (axis "
                             f"{self.axis} of input shape {input_shape}) cannot be split into "
                             f"{groups} equal groups")
        self._groups = groups
        self._build_affine((channels,))
        self.built = True

    @in_float32
    def call(self, inputs, training=None):
        ndim, axis = inputs.ndim, self.axis % inputs.ndim
        shape = inputs.shape
        if None in shape[1:]:
            raise ValueError(f"GroupNormalization {self.name!r}: all but the batch axis of the "
                             f"input must be known, got shape {shape}")
        channels = shape[axis]
        grouped = shape[1:axis] + (self._groups, channels // self._groups) + shape[axis + 1:]
        x = ops.reshape(inputs, (-1,) + grouped)
        reduce_axes = tuple(a for a in range(1, ndim + 1) if a != axis)
        mean, variance = moments(x, reduce_axes)
        normalized = ops.reshape((x - mean) / ops.sqrt(variance + self.epsilon),
                                 (-1,) + shape[1:])
        return self._scale_and_center(normalized, ndim, (axis,))

    def get_config(self):
        return {**super().get_config(), "groups": self.groups}
