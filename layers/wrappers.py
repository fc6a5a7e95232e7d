"""Layers that wrap another layer: the ``Wrapper`` base and ``TimeDistributed``.

A wrapper owns the wrapped layer (its weights are the wrapper's) and saves it inside its own
config as ``{"class_name", "config"}``, the way Keras serializes a nested layer, so
``from_config`` rebuilds both::

    frames = hiapi.Input((8, 28, 28, 1))
    features = layers.TimeDistributed(layers.Conv2D(16, 3))(frames)   # (None, 8, 26, 26, 16)
"""
from __future__ import annotations

from typing import Any

from hiapi.graph import ops
from hiapi.layers.layer import Layer, _flatten
from hiapi.layers.call_signature import call_accepts
from hiapi.serialization import saving_functions


def serialize(layer):
    """The wrapped layer's config, as the saving floor writes layers (and models)."""
    return saving_functions.get("serialize_layer")(layer)


def deserialize(config):
    return saving_functions.get("deserialize_layer")(config)


class Wrapper(Layer):
    """Base of layers that add behaviour around ``layer`` (Keras's ``keras.layers.Wrapper``)."""

    def __init__(self, layer: Layer, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not isinstance(layer, Layer):
            raise ValueError(f"{type(self).__name__} {self.name!r}: layer must be a Layer "
                             f"instance, got {layer!r}")
        self.layer = layer

    def get_config(self):
        return {**super().get_config(), "layer": serialize(self.layer)}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["layer"] = deserialize(config["layer"])
        return cls(**config)


class TimeDistributed(Wrapper):
    """Apply ``layer`` to every time step: ``(batch, steps, ...)`` is folded to
    ``(batch * steps, ...)``, passed through ``layer`` once, and unfolded, so the same weights
    see every step (one GEMM for a ``Dense``, not one per step). The mask of the input, if
    any, is the mask of the output; a wrapped layer whose ``call`` takes ``mask`` gets each
    step's part of it (e.g. the word mask of each sentence for a wrapped LSTM), and the output
    mask is then the wrapped layer's, or (batch, steps): a sentence is real if a word is
    (Keras 2's rule; Keras 3 would keep the word mask on the sentence outputs)."""

    def __init__(self, layer: Layer, **kwargs: Any) -> None:
        super().__init__(layer, **kwargs)
        self.supports_masking = True
        self._inner_mask = None

    def build(self, input_shape):
        if len(input_shape) < 3:
            raise ValueError(f"TimeDistributed {self.name!r}: the input needs at least 3 axes "
                             f"(batch, steps, features...), got shape {input_shape}")
        self.built = True

    def call(self, inputs, training=None, mask=None):
        steps, inner = inputs.shape[1], inputs.shape[2:]
        if steps is None or None in inner:
            raise ValueError(f"TimeDistributed {self.name!r}: the steps and feature axes "
                             f"must be known, got input shape {inputs.shape}")
        folded = ops.reshape(inputs, (-1,) + tuple(inner))
        extra = {}
        if mask is not None and call_accepts(self.layer, "mask"):
            if mask.ndim < 2 or mask.shape[1] != steps:
                raise ValueError(f"TimeDistributed {self.name!r}: the mask must have shape "
                                 f"(batch, {steps}, ...), got {mask.shape}")
            # as Keras: each step's slice of the mask goes to the wrapped layer's call
            extra["mask"] = ops.reshape(mask, (-1,) + tuple(mask.shape[2:]))
        outputs = self.layer(folded, training=training, **extra)
        if len(_flatten(outputs)) != 1:
            raise ValueError(f"TimeDistributed {self.name!r}: the wrapped layer "
                             f"{self.layer.name!r} must return one tensor, got "
                             f"{len(_flatten(outputs))}")
        inner_mask = getattr(outputs, "_keras_mask", None)
        self._inner_mask = None if inner_mask is None else \
            ops.reshape(inner_mask, (-1, steps) + tuple(inner_mask.shape[1:]))
        return ops.reshape(outputs, (-1, steps) + tuple(outputs.shape[1:]))

    def compute_mask(self, inputs, previous_mask=None):
        """The wrapped layer's own output mask, unfolded; else the input's mask reduced to
        (batch, steps): a step is real if any of its parts is (a sentence with any word)."""
        if self._inner_mask is not None:
            return self._inner_mask
        if previous_mask is None or previous_mask.ndim == 2:
            return previous_mask
        parts = tuple(range(2, previous_mask.ndim))
        return ops.greater(ops.max(ops.cast(previous_mask, "float32"), parts), 0.0)
