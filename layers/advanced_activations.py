"""The activation layers with arguments of their own, as in Keras 3: ``ReLU``, ``LeakyReLU``,
``ELU``, ``PReLU`` (learned slopes) and ``Softmax`` (any axis, an optional mask). Each is the
activation written with graph ops, so gradients come from the ops' rules::

    x = layers.Conv2D(16, 3)(inputs)
    x = layers.PReLU(shared_axes=[1, 2])(x)        # one learned slope per channel
"""
from __future__ import annotations

import warnings
from typing import Any, Sequence

import numpy as np

from hiapi import activations, constraints, initializers, regularizers
from hiapi.graph import ops
from hiapi.hints import ConstraintLike, InitializerLike, RegularizerLike
from hiapi.layers.input_spec import InputSpec
from hiapi.layers.layer import Layer


def _require_non_negative(layer, argument, value, allow_none=False):
    if value is None and allow_none:
        return
    if value is None or not isinstance(value, (int, float, np.number)) or value < 0:
        raise ValueError(f"{type(layer).__name__} {layer.name!r}: {argument} must be a float "
                         f">= 0{' or None' if allow_none else ''}, got {value!r}")


class ReLU(Layer):
    """``max_value`` if x >= max_value, x if threshold < x < max_value, else
    ``negative_slope * (x - threshold)`` (Keras's ``ReLU``; the defaults give plain relu)."""

    def __init__(self, max_value: float | None = None, negative_slope: float = 0.0,
                 threshold: float = 0.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        _require_non_negative(self, "max_value", max_value, allow_none=True)
        _require_non_negative(self, "negative_slope", negative_slope)
        _require_non_negative(self, "threshold", threshold)
        self.max_value, self.negative_slope, self.threshold = max_value, negative_slope, \
            threshold
        self.supports_masking = True

    def call(self, inputs, training=None):
        kept = ops.where(inputs > self.threshold, inputs, 0.0) if self.threshold \
            else ops.relu(inputs)
        if self.max_value is not None:
            kept = ops.minimum(kept, float(self.max_value))
        if self.negative_slope:
            kept = kept - self.negative_slope * ops.relu(self.threshold - inputs)
        return kept

    def get_config(self):
        return {**super().get_config(), "max_value": self.max_value,
                "negative_slope": self.negative_slope, "threshold": self.threshold}


class LeakyReLU(Layer):
    """x for x >= 0, ``negative_slope * x`` below (Keras 3's name; Keras 2's ``alpha=`` is
    accepted with Keras's deprecation warning)."""

    def __init__(self, negative_slope: float = 0.3, **kwargs: Any) -> None:
        if "alpha" in kwargs:
            negative_slope = kwargs.pop("alpha")
            warnings.warn("Argument `alpha` is deprecated. Use `negative_slope` instead.",
                          UserWarning, stacklevel=2)
        super().__init__(**kwargs)
        _require_non_negative(self, "negative_slope", negative_slope)
        self.negative_slope = negative_slope
        self.supports_masking = True

    def call(self, inputs, training=None):
        return ops.where(inputs >= 0, inputs, self.negative_slope * inputs)

    def get_config(self):
        return {**super().get_config(), "negative_slope": self.negative_slope}


class ELU(Layer):
    """x for x > 0, ``alpha * (exp(x) - 1)`` below."""

    def __init__(self, alpha: float = 1.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.alpha = alpha
        self.supports_masking = True

    def call(self, inputs, training=None):
        return activations.elu(inputs, alpha=self.alpha)

    def get_config(self):
        return {**super().get_config(), "alpha": self.alpha}


class PReLU(Layer):
    """x for x >= 0, ``alpha * x`` below, with ``alpha`` a weight of the input's shape (less
    the batch axis), shared (size 1) along ``shared_axes``. He et al. 2015,
    https://arxiv.org/abs/1502.01852."""

    def __init__(self, alpha_initializer: InitializerLike = "Zeros",
                 alpha_regularizer: RegularizerLike = None,
                 alpha_constraint: ConstraintLike = None,
                 shared_axes: int | Sequence[int] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.alpha_initializer = initializers.get(alpha_initializer)
        self.alpha_regularizer = regularizers.get(alpha_regularizer)
        self.alpha_constraint = constraints.get(alpha_constraint)
        self.shared_axes = None if shared_axes is None else \
            [shared_axes] if isinstance(shared_axes, int) else list(shared_axes)
        self.supports_masking = True

    def build(self, input_shape):
        shape = list(input_shape[1:])
        for axis in self.shared_axes or []:
            if not 1 <= axis < len(input_shape):
                raise ValueError(f"PReLU {self.name!r}: shared_axes holds {axis}, but the "
                                 f"input has shape {tuple(input_shape)} (axes 1 to "
                                 f"{len(input_shape) - 1} can be shared)")
            shape[axis - 1] = 1
        self.alpha = self.add_weight(shape, self.alpha_initializer, "alpha",
                                     regularizer=self.alpha_regularizer,
                                     constraint=self.alpha_constraint)
        self.input_spec = InputSpec(ndim=len(input_shape), axes={
            i: input_shape[i] for i in range(1, len(input_shape))
            if i not in (self.shared_axes or [])})
        self.built = True

    def call(self, inputs, training=None):
        return ops.relu(inputs) - self.alpha.read * ops.relu(-inputs)

    def get_config(self):
        return {**super().get_config(),
                "alpha_initializer": initializers.serialize(self.alpha_initializer),
                "alpha_regularizer": regularizers.serialize(self.alpha_regularizer),
                "alpha_constraint": constraints.serialize(self.alpha_constraint),
                "shared_axes": self.shared_axes}


class Softmax(Layer):
    """Softmax over ``axis`` (an int, or several axes normalised together). A ``mask``
    (broadcastable to the inputs; True or > 0.5 keeps) excludes positions: they get 0 and
    the others share the whole mass, as in Keras."""

    def __init__(self, axis: int | Sequence[int] = -1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.axis = list(axis) if isinstance(axis, (list, tuple)) else axis
        self.supports_masking = True

    def call(self, inputs, mask=None):
        if mask is not None:
            mask = self._boolean_mask(inputs, mask)
            lowest = -3e4 if inputs.dtype == np.float16 else -1e9
            inputs = ops.where(mask, inputs, lowest)
        axis = tuple(self.axis) if isinstance(self.axis, list) else self.axis
        outputs = ops.softmax(inputs, axis)
        return outputs if mask is None else ops.where(mask, outputs, 0.0)

    def _boolean_mask(self, inputs, mask):
        shapes = f"inputs.shape={inputs.shape}, mask.shape={mask.shape}"
        if mask.ndim > inputs.ndim or any(
                m is not None and i is not None and m not in (1, i)
                for m, i in zip(mask.shape[::-1], inputs.shape[::-1])):
            raise ValueError(f"Softmax {self.name!r}: the mask must broadcast to the inputs "
                             f"(each mask axis 1 or the input's size, no more axes); got "
                             f"{shapes}")
        return mask if mask.dtype == np.bool_ else mask > 0.5

    def get_config(self):
        return {**super().get_config(), "axis": self.axis}
