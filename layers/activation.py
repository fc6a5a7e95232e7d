"""``Activation``: applies an activation function by name or callable."""
from hiapi import activations
from hiapi.layers.layer import Layer


class Activation(Layer):
    """``Activation("relu")`` applies ``hiapi.activations.relu`` to its input."""

    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        self.activation = activations.get(activation)
        self.supports_masking = True

    def call(self, inputs, training=None):
        return self.activation(inputs)

    def get_config(self):
        return {**super().get_config(), "activation": activations.serialize(self.activation)}
