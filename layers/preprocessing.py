"""``Rescaling`` and ``Normalization``: the numeric preprocessing layers, with Keras 3's
arguments, weights and ``adapt``.

They sit at the front of a model so that the model carries its own preprocessing: a saved model
fed raw pixels or raw features gives the same predictions as the one that was trained.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from hiapi.runtime.dtypes import as_dtype
from hiapi.hints import ArrayLike
from hiapi.graph import ops
from hiapi.layers.layer import Layer

EPSILON = 1e-7          # keras.backend.epsilon(): the floor on the standard deviation


class Rescaling(Layer):
    """``y = x * scale + offset``, e.g. ``Rescaling(1 / 255)`` for [0, 1] pixels or
    ``Rescaling(1 / 127.5, offset=-1)`` for [-1, 1]. Integer inputs (uint8 images) are cast to
    the layer's float dtype first. ``scale``/``offset`` may be arrays broadcasting against the
    input (one value per channel)."""
    supports_masking = True

    def __init__(self, scale: ArrayLike, offset: ArrayLike = 0.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        for name, value in (("scale", scale), ("offset", offset)):
            array = np.asarray(value)
            if array.dtype.kind not in "iuf" or not np.isfinite(array).all():
                raise ValueError(f"Rescaling {self.name!r}: {name} must be a finite number or "
                                 f"array of numbers, got {value!r}")
        self.scale, self.offset = scale, offset

    def call(self, inputs, training=None):
        x = ops.cast(inputs, self.compute_dtype)
        scale = np.asarray(self.scale, as_dtype(self.compute_dtype))
        offset = np.asarray(self.offset, as_dtype(self.compute_dtype))
        return x * (float(scale) if scale.ndim == 0 else scale) + \
            (float(offset) if offset.ndim == 0 else offset)

    def get_config(self):
        return {**super().get_config(), "scale": _plain(self.scale),
                "offset": _plain(self.offset)}


class Normalization(Layer):
    """``(x - mean) / max(sqrt(variance), 1e-7)`` with one mean and variance per index of
    ``axis`` (``axis=None``: one scalar pair); ``invert=True`` undoes it. The statistics are
    given (``mean=``, ``variance=``) or computed from data by ``adapt``::

        norm = hiapi.layers.Normalization()
        norm.adapt(x_train)                 # a numpy array, or an iterable of batches
        model = hiapi.Sequential([hiapi.Input((8,)), norm, hiapi.layers.Dense(1)])

    Adapted statistics are non-trainable weights ``mean``, ``variance`` and ``count`` (kept, as
    in Keras 3, for compatibility), so they are saved with the model and ``summary()`` counts
    match Keras. ``adapt`` over batches merges per-batch moments exactly (Chan et al.), giving
    the same numbers as one pass over the concatenated data.
    """
    supports_masking = True

    def __init__(self, axis: int | Sequence[int] | None = -1, mean: ArrayLike | None = None,
                 variance: ArrayLike | None = None, invert: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if axis is None:
            axis = ()
        self.axis = (int(axis),) if isinstance(axis, (int, np.integer)) else tuple(axis)
        if (mean is None) != (variance is None):
            raise ValueError(f"Normalization {self.name!r}: set both mean and variance, or "
                             f"neither (to adapt); got mean={mean!r}, variance={variance!r}")
        if mean is not None and variance is not None:     # both or neither, checked above
            if np.shape(mean) != np.shape(variance):
                raise ValueError(f"Normalization {self.name!r}: mean and variance must have "
                                 f"the same shape, got {np.shape(mean)} and "
                                 f"{np.shape(variance)}")
            if np.ndim(mean) > len(self.axis):
                raise ValueError(f"Normalization {self.name!r}: mean of rank {np.ndim(mean)} "
                                 f"needs at most that many axes, got axis={axis!r}")
            if np.any(np.asarray(variance) < 0):
                raise ValueError(f"Normalization {self.name!r}: variance must be >= 0, got "
                                 f"{variance!r}")
        self.input_mean, self.input_variance, self.invert = mean, variance, bool(invert)

    def build(self, input_shape):
        ndim = len(input_shape)
        if any(not -ndim <= a < ndim for a in self.axis):
            raise ValueError(f"Normalization {self.name!r}: axis {self.axis} out of range for "
                             f"inputs of rank {ndim} (shape {input_shape})")
        self._keep = tuple(sorted(a % ndim for a in self.axis))
        self._reduce = tuple(d for d in range(ndim) if d not in self._keep)
        if any(input_shape[d] is None for d in self._keep):
            raise ValueError(f"Normalization {self.name!r}: the kept axes {self._keep} of input "
                             f"shape {input_shape} must have known sizes")
        self._build_shape = tuple(input_shape)
        self._stats_shape = tuple(input_shape[d] for d in self._keep)
        self._broadcast_shape = tuple(input_shape[d] if d in self._keep else 1
                                      for d in range(ndim))
        if self.input_mean is None:
            self.adapt_mean = self.add_weight(self._stats_shape, "zeros", "mean",
                                              trainable=False)
            self.adapt_variance = self.add_weight(self._stats_shape, "ones", "variance",
                                                  trainable=False)
            self.count = self.add_weight((), "zeros", "count", trainable=False, dtype="int64")
        self.built = True

    def _given(self, value):
        """A given mean or variance, its axes aligned right to left with the kept axes."""
        value = np.asarray(value, self.dtype)
        shape = [1] * len(self._broadcast_shape)
        for i in range(1, value.ndim + 1):
            shape[self._keep[-i]] = value.shape[-i]
        return np.broadcast_to(value.reshape(shape), self._broadcast_shape).copy()

    def call(self, inputs, training=None):
        x = ops.cast(inputs, self.compute_dtype)
        if self.input_mean is not None:
            mean, variance = self._given(self.input_mean), self._given(self.input_variance)
            std = np.maximum(np.sqrt(variance), np.float32(EPSILON))
        else:
            mean = ops.reshape(self.adapt_mean.read, self._broadcast_shape)
            variance = ops.reshape(self.adapt_variance.read, self._broadcast_shape)
            std = ops.maximum(ops.sqrt(variance), EPSILON)
        return mean + x * std if self.invert else (x - mean) / std

    # ---- adapt --------------------------------------------------------------------------------
    def adapt(self, data):
        """Set ``mean``/``variance`` from ``data``: a numpy array, or an iterable of batches
        (a list of arrays, a generator, a ``hiapi`` dataset; ``(x, y)`` batches use x)."""
        if self.input_mean is not None:
            raise ValueError(f"Normalization {self.name!r}: adapt() cannot change the mean and "
                             f"variance given to the constructor")
        if isinstance(data, np.ndarray) or np.isscalar(data):
            batches = [np.asarray(data)]
        elif hasattr(data, "__iter__"):
            batches = (_batch_array(b, self.name) for b in data)
        else:
            raise TypeError(f"Normalization {self.name!r}: adapt() takes a numpy array or an "
                            f"iterable of batches, got {type(data).__name__}")
        mean = variance = None
        total = 0
        for batch in batches:
            batch = self._check_batch(np.asarray(batch, np.float64))
            count = math.prod(batch.shape[d] for d in self._reduce)
            if count == 0:
                continue
            b_mean, b_var = batch.mean(axis=self._reduce), batch.var(axis=self._reduce)
            if mean is None:
                mean, variance, total = b_mean, b_var, count
                continue
            total += count
            weight = count / total
            new_mean = mean * (1 - weight) + b_mean * weight
            variance = (variance + (mean - new_mean) ** 2) * (1 - weight) + \
                (b_var + (b_mean - new_mean) ** 2) * weight
            mean = new_mean
        if mean is None:
            raise ValueError(f"Normalization {self.name!r}: adapt() got no data (an empty "
                             f"array or no batches)")
        if not (np.isfinite(mean).all() and np.isfinite(variance).all()):
            raise ValueError(f"Normalization {self.name!r}: adapt() data contains NaN or "
                             f"infinite values")
        self.adapt_mean.assign(mean.reshape(self._stats_shape))
        self.adapt_variance.assign(variance.reshape(self._stats_shape))

    def _check_batch(self, batch):
        if not self.built:
            self.build((None,) + batch.shape[1:] if batch.ndim else ())
        if batch.ndim != len(self._build_shape) or any(
                batch.shape[d] != self._build_shape[d] for d in self._keep):
            raise ValueError(f"Normalization {self.name!r}: adapt() got data of shape "
                             f"{batch.shape}, the layer takes inputs of shape "
                             f"{self._build_shape}")
        return batch

    def get_config(self):
        return {**super().get_config(), "axis": self.axis, "invert": self.invert,
                "mean": _plain(self.input_mean), "variance": _plain(self.input_variance)}


def _batch_array(batch, name):
    if isinstance(batch, (tuple, list)) and len(batch) in (1, 2, 3) and \
            np.ndim(batch[0]) >= 1 and not np.isscalar(batch[0]):
        batch = batch[0]                     # (x, y) or (x, y, sample_weight)
    array = np.asarray(batch)
    if array.dtype.kind not in "biuf":
        raise TypeError(f"Normalization {name!r}: adapt() batches must be numeric arrays, got "
                        f"dtype {array.dtype}")
    return array


def _plain(value):
    """JSON-friendly config value: arrays become (nested) lists."""
    if value is None:
        return None
    array = np.asarray(value)
    return array.item() if array.ndim == 0 else array.tolist()
