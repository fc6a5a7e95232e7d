"""``Dense``: ``activation(inputs @ kernel + bias)`` over the last axis (Keras's layer)."""
from __future__ import annotations

from typing import Any

from hiapi.hints import ActivationLike, ConstraintLike, InitializerLike, RegularizerLike
from hiapi import activations, constraints, initializers, regularizers
from hiapi.graph import ops
from hiapi.layers.input_spec import InputSpec
from hiapi.layers.layer import Layer


class Dense(Layer):
    """Fully connected layer: ``Dense(512, activation="relu")``.

    The kernel has shape ``(input_dim, units)`` like Keras's, so weights port unchanged.
    Inputs of rank > 2 are multiplied on their last axis.
    """

    def __init__(self, units: int, activation: ActivationLike = None, use_bias: bool = True,
                 kernel_initializer: InitializerLike = "glorot_uniform",
                 bias_initializer: InitializerLike = "zeros",
                 kernel_regularizer: RegularizerLike = None,
                 bias_regularizer: RegularizerLike = None, kernel_constraint: ConstraintLike = None,
                 bias_constraint: ConstraintLike = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not isinstance(units, int) or units <= 0:
            raise ValueError(f"Dense {self.name!r}: units must be a positive integer, "
                             f"got {units!r}")
        self.units = units
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self._config_initializers = (kernel_initializer, bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self.input_spec = InputSpec(min_ndim=2)
        self.supports_masking = True      # per time step on 3-D input: the mask still holds

    def build(self, input_shape):
        input_dim = input_shape[-1]
        if input_dim is None:
            raise ValueError(f"Dense {self.name!r}: the last axis of its input must be known, "
                             f"got input shape {input_shape}")
        self.kernel = self.add_weight((input_dim, self.units), self.kernel_initializer, "kernel",
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self.bias = self.add_weight((self.units,), self.bias_initializer, "bias",
                                    regularizer=self.bias_regularizer,
                                    constraint=self.bias_constraint) if self.use_bias else None
        self.input_spec = InputSpec(min_ndim=2, axes={-1: input_dim})
        self.built = True

    def call(self, inputs, training=None):
        x = ops.matmul(inputs, self.kernel.read)
        if self.bias is not None:
            x = x + self.bias.read
        return self.activation(x)

    def get_config(self):
        kernel_init, bias_init = self._config_initializers
        return {**super().get_config(), "units": self.units,
                "activation": activations.serialize(self.activation), "use_bias": self.use_bias,
                "kernel_initializer": initializers.serialize(kernel_init),
                "bias_initializer": initializers.serialize(bias_init),
                "kernel_regularizer": regularizers.serialize(self.kernel_regularizer),
                "bias_regularizer": regularizers.serialize(self.bias_regularizer),
                "kernel_constraint": constraints.serialize(self.kernel_constraint),
                "bias_constraint": constraints.serialize(self.bias_constraint)}
