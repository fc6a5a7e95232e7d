"""``Activation``: applies an activation function by name or callable."""
from __future__ import annotations

from typing import Any

from hiapi.hints import ActivationLike
from hiapi import activations
from hiapi.layers.layer import Layer


class Activation(Layer):
    """``Activation("relu")`` applies ``hiapi.activations.relu`` to its input."""

    def __init__(self, activation: ActivationLike, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.activation = activations.get(activation)
        self.supports_masking = True

    def call(self, inputs, training=None):
        return self.activation(inputs)

    def get_config(self):
        return {**super().get_config(), "activation": activations.serialize(self.activation)}
