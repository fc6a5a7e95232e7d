"""``BatchNormalization`` and ``LayerNormalization`` with Keras's arguments and defaults."""
from __future__ import annotations

import functools
from typing import Any, Sequence

from hiapi.hints import ConstraintLike, InitializerLike, RegularizerLike
from hiapi import constraints, initializers, regularizers
from hiapi.runtime.dtypes import is_low_precision
from hiapi.graph import ops
from hiapi.layers.layer import Layer


def in_float32(call):
    """Run a normalization's ``call`` in float32 when its input is 16-bit (mixed precision),
    as Keras 3 does: a variance of float16 squares overflows or loses the small differences,
    and the statistics are kept in float32 anyway. The output is cast back to the input's
    type."""
    @functools.wraps(call)
    def wrapped(self, inputs, *args, **kwargs):
        if not is_low_precision(inputs.dtype):
            return call(self, inputs, *args, **kwargs)
        return ops.cast(call(self, ops.cast(inputs, "float32"), *args, **kwargs), inputs.dtype)
    return wrapped


def moments(x, axes):
    """Mean and (biased) variance over ``axes``, kept as size-1 axes."""
    mean = ops.mean(x, axes, keepdims=True)
    return mean, ops.mean(ops.square(x - mean), axes, keepdims=True)


def masked_moments(x, mask, axes, epsilon=1e-7):
    """``moments`` over the real steps only: ``mask`` (x without its last axis) is true where a
    step is real (Keras 3's masked batch statistics, epsilon included)."""
    real = ops.expand_dims(mask, -1)
    count = ops.sum(ops.broadcast_like(ops.cast(real, x.dtype), x), axes, keepdims=True)
    mean = ops.sum(ops.where(real, x, 0.0), axes, keepdims=True) / (count + epsilon)
    spread = ops.sum(ops.square(ops.where(real, x - mean, 0.0)), axes, keepdims=True)
    return mean, spread / (count + epsilon)


class _Normalization(Layer):
    def __init__(self, axis: int | Sequence[int] = -1, epsilon: float = 1e-3, center: bool = True,
                 scale: bool = True, beta_initializer: InitializerLike = "zeros",
                 gamma_initializer: InitializerLike = "ones",
                 beta_regularizer: RegularizerLike = None,
                 gamma_regularizer: RegularizerLike = None, beta_constraint: ConstraintLike = None,
                 gamma_constraint: ConstraintLike = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.axis = axis
        self.epsilon, self.center, self.scale = epsilon, center, scale
        self.beta_initializer, self.gamma_initializer = beta_initializer, gamma_initializer
        self.beta_regularizer = regularizers.get(beta_regularizer)
        self.gamma_regularizer = regularizers.get(gamma_regularizer)
        self.beta_constraint = constraints.get(beta_constraint)
        self.gamma_constraint = constraints.get(gamma_constraint)

    def _axes(self, ndim):
        axes = (self.axis,) if isinstance(self.axis, int) else tuple(self.axis)
        return tuple(sorted(a % ndim for a in axes))

    def _param_shape(self, input_shape, axes):
        shape = tuple(input_shape[a] for a in axes)
        if None in shape:
            raise ValueError(f"{type(self).__name__} {self.name!r}: axis {self.axis} of input "
                             f"shape {input_shape} must have a known size")
        return shape

    def _broadcast(self, v, ndim, axes):
        """A parameter of shape (sizes of axes) reshaped to broadcast against the input."""
        shape = [1] * ndim
        for a, size in zip(axes, v.shape):
            shape[a] = size
        return ops.reshape(v, shape)

    def _scale_and_center(self, normalized, ndim, axes):
        if self.scale:
            normalized = normalized * self._broadcast(self.gamma.read, ndim, axes)
        if self.center:
            normalized = normalized + self._broadcast(self.beta.read, ndim, axes)
        return normalized

    def _build_affine(self, shape):
        # autocast=False: read in float32, where the statistics are computed (in_float32)
        self.gamma = self.add_weight(shape, self.gamma_initializer, "gamma",
                                     regularizer=self.gamma_regularizer,
                                     constraint=self.gamma_constraint,
                                     autocast=False) if self.scale else None
        self.beta = self.add_weight(shape, self.beta_initializer, "beta",
                                    regularizer=self.beta_regularizer,
                                    constraint=self.beta_constraint,
                                    autocast=False) if self.center else None

    def get_config(self):
        return {**super().get_config(), "axis": self.axis, "epsilon": self.epsilon,
                "center": self.center, "scale": self.scale,
                "beta_initializer": initializers.serialize(self.beta_initializer),
                "gamma_initializer": initializers.serialize(self.gamma_initializer),
                "beta_regularizer": regularizers.serialize(self.beta_regularizer),
                "gamma_regularizer": regularizers.serialize(self.gamma_regularizer),
                "beta_constraint": constraints.serialize(self.beta_constraint),
                "gamma_constraint": constraints.serialize(self.gamma_constraint)}


class BatchNormalization(_Normalization):
    """Normalise over the batch (and spatial axes) per feature of ``axis``.

    Training: batch statistics, and the moving statistics are updated in the graph,
    ``moving = moving * momentum + batch * (1 - momentum)`` (Ioffe & Szegedy 2015,
    https://arxiv.org/abs/1502.03167). Inference (``training=False``, as in evaluate/predict):
    the moving statistics. With a mask (padded sequences) the batch statistics are over the
    real steps only, and the mask is passed on, as in Keras.
    """
    supports_masking = True

    def __init__(self, axis: int | Sequence[int] = -1, momentum: float = 0.99,
                 epsilon: float = 1e-3, center: bool = True, scale: bool = True,
                 moving_mean_initializer: InitializerLike = "zeros",
                 moving_variance_initializer: InitializerLike = "ones", **kwargs: Any) -> None:
        super().__init__(axis=axis, epsilon=epsilon, center=center, scale=scale, **kwargs)
        self.momentum = momentum
        self.moving_mean_initializer = moving_mean_initializer
        self.moving_variance_initializer = moving_variance_initializer

    def build(self, input_shape):
        shape = self._param_shape(input_shape, self._axes(len(input_shape)))
        self._build_affine(shape)
        self.moving_mean = self.add_weight(shape, self.moving_mean_initializer, "moving_mean",
                                           trainable=False, autocast=False)
        self.moving_variance = self.add_weight(shape, self.moving_variance_initializer,
                                               "moving_variance", trainable=False,
                                               autocast=False)
        self.built = True

    @in_float32
    def call(self, inputs, training=None, mask=None):
        ndim, axes = inputs.ndim, self._axes(inputs.ndim)
        reduce_axes = tuple(a for a in range(ndim) if a not in axes)
        if mask is not None and mask.ndim != ndim - 1:
            raise ValueError(f"BatchNormalization {self.name!r}: the mask must have one axis "
                             f"less than the input, got mask shape {mask.shape} for input "
                             f"shape {inputs.shape}")
        if training and self.trainable:
            mean, variance = moments(inputs, reduce_axes) if mask is None else \
                masked_moments(inputs, mask, reduce_axes)
            for moving, batch in ((self.moving_mean, mean), (self.moving_variance, variance)):
                batch = ops.reshape(ops.stop_gradient(batch), moving.shape)
                self.add_update(moving, moving.read * self.momentum +
                                batch * (1.0 - self.momentum))
        else:
            mean = self._broadcast(self.moving_mean.read, ndim, axes)
            variance = self._broadcast(self.moving_variance.read, ndim, axes)
        normalized = (inputs - mean) / ops.sqrt(variance + self.epsilon)
        return self._scale_and_center(normalized, ndim, axes)

    def get_config(self):
        return {**super().get_config(), "momentum": self.momentum,
                "moving_mean_initializer": initializers.serialize(self.moving_mean_initializer),
                "moving_variance_initializer":
                    initializers.serialize(self.moving_variance_initializer)}


class LayerNormalization(_Normalization):
    """Normalise each sample over ``axis`` (Ba, Kiros & Hinton 2016,
    https://arxiv.org/abs/1607.06450); the same in training and inference."""
    supports_masking = True        # each time step is normalised alone: the mask still holds

    def build(self, input_shape):
        self._build_affine(self._param_shape(input_shape, self._axes(len(input_shape))))
        self.built = True

    @in_float32
    def call(self, inputs, training=None):
        axes = self._axes(inputs.ndim)
        mean, variance = moments(inputs, axes)
        normalized = (inputs - mean) / ops.sqrt(variance + self.epsilon)
        return self._scale_and_center(normalized, inputs.ndim, axes)
