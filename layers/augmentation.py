"""Random image augmentation with Keras 3's layers: ``RandomFlip``, ``RandomCrop``,
``RandomRotation``, ``RandomZoom``. Each transforms images only in training
(``fit``/``train_on_batch``, or ``training=True``) and is the identity at inference, except
``RandomCrop``, which always returns ``(height, width)`` images (a centre crop then).

Every layer draws its randomness from hiapi's counter-based ``random_uniform`` op: a seed (the
layer's, drawn from the global seed unless given) and a step counter the training graph
increments, so augmentations are reproducible under ``hiapi.utils.set_random_seed`` and differ at
every step. All resample through one op, ``image_transform`` (per-image projective transforms in
Keras's convention, nearest or bilinear, Keras's fill modes), so the pixels match Keras's
numpy/JAX backends for the same transform and the image gradient is exact.

    augment = hiapi.Sequential([layers.RandomFlip("horizontal"), layers.RandomRotation(0.1),
                                layers.RandomZoom(0.2), layers.RandomCrop(24, 24)])
"""
from __future__ import annotations

import math
from typing import Any, Literal, Sequence

import numpy as np

from hiapi.hints import DataFormat
from hiapi.graph import ops
from hiapi.graph.ops.image import FILL_MODES, INTERPOLATIONS
from hiapi.layers.data_format import check_data_format
from hiapi.layers.input_spec import InputSpec
from hiapi.layers.seeded import SeededLayer

# the values FILL_MODES, INTERPOLATIONS and RandomFlip.MODES hold, for the type checker
FillMode = Literal["reflect", "wrap", "constant", "nearest", "mirror"]
Interpolation = Literal["bilinear", "nearest"]
FlipMode = Literal["horizontal", "vertical", "horizontal_and_vertical"]


class _RandomImageLayer(SeededLayer):
    def __init__(self, seed: int | None = None, data_format: DataFormat = None,
                 **kwargs: Any) -> None:
        super().__init__(seed=seed, **kwargs)
        self.data_format = check_data_format(self, data_format)
        self.input_spec = InputSpec(ndim=4)

    def _fail(self, message):
        raise ValueError(f"{type(self).__name__} {self.name!r}: {message}")

    identity_at_inference = True

    def call(self, inputs, training=None):
        x = ops.cast(inputs, self.compute_dtype)
        if not training and self.identity_at_inference:
            return x
        if None in x.shape[1:]:
            self._fail(f"the image height, width and channels must be known, got input shape "
                       f"{inputs.shape}")
        if self.data_format == "channels_first":
            x = ops.transpose(x, (0, 2, 3, 1))
        y = self._transform(x, bool(training))
        return ops.transpose(y, (0, 3, 1, 2)) if self.data_format == "channels_first" else y

    def _uniform(self, x, stream, per_image=True):
        """Uniform [0, 1) numbers, one per image (shape (batch, 1)) or one for the batch;
        ``stream`` separates the independent draws of one layer."""
        like = _per_image(x) if per_image else ops.constant(np.zeros((), np.float32))
        return ops.random_uniform(like, self.seed + 2 * stream, self.counter.read)

    def _advance(self):
        self.add_update(self.counter, self.counter.read + 1)

    def get_config(self):
        return {**super().get_config(), "seed": self.seed, "data_format": self.data_format}


def _per_image(x):
    """A (batch, 1) view of ``x``: the shape random numbers and transform rows follow."""
    return ops.slice_axis(ops.reshape(x, (-1, math.prod(x.shape[1:]))), 1, 0, 1)


def _transforms(like, row):
    """(batch, 8) transforms from 8 entries: (batch, 1) Vars or Python numbers."""
    columns = [v if not isinstance(v, (int, float)) else
               ops.broadcast_like(ops.constant(np.full((1, 1), v, np.float32)), like)
               for v in row]
    return ops.concatenate(columns, axis=1)


def _factor_pair(layer, name, factor, bound=None):
    """Keras's factor: a number f means (-|f|, |f|); a pair is sorted into (lower, upper)."""
    pair = (-abs(factor), abs(factor)) if isinstance(factor, (int, float)) else tuple(factor)
    if len(pair) != 2 or not all(isinstance(v, (int, float)) for v in pair) or \
            (bound is not None and max(map(abs, pair)) > bound):
        within = f" within [-{bound}, {bound}]" if bound is not None else ""
        layer._fail(f"{name} must be a number or a pair of numbers{within}, got {factor!r}")
    return tuple(sorted(float(v) for v in pair))


def _check_resampling(layer, fill_mode, interpolation):
    if fill_mode not in FILL_MODES:
        layer._fail(f"fill_mode must be one of {FILL_MODES}, got {fill_mode!r}")
    if interpolation not in INTERPOLATIONS:
        layer._fail(f"interpolation must be one of {INTERPOLATIONS}, got {interpolation!r}")


class RandomFlip(_RandomImageLayer):
    """Flip each image, with probability 1/2, left-right (``"horizontal"``), top-bottom
    (``"vertical"``) or both at once (``"horizontal_and_vertical"``, the default)."""
    MODES = ("horizontal", "vertical", "horizontal_and_vertical")

    def __init__(self, mode: FlipMode = "horizontal_and_vertical", seed: int | None = None,
                 data_format: DataFormat = None, **kwargs: Any) -> None:
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        if mode not in self.MODES:
            self._fail(f"mode must be one of {self.MODES}, got {mode!r}")
        self.mode = mode

    def _transform(self, x, training):
        flip = ops.cast(self._uniform(x, 0) <= 0.5, np.float32)     # 1.0: flip this image
        h, w = x.shape[1:3]
        a0, a2 = (1.0 - 2.0 * flip, flip * float(w - 1)) if "horizontal" in self.mode \
            else (1.0, 0.0)
        b1, b2 = (1.0 - 2.0 * flip, flip * float(h - 1)) if "vertical" in self.mode \
            else (1.0, 0.0)
        self._advance()
        return ops.image_transform(x, _transforms(flip, [a0, 0.0, a2, 0.0, b1, b2, 0.0, 0.0]),
                                   (h, w), "nearest", "nearest")

    def get_config(self):
        return {**super().get_config(), "mode": self.mode}


class RandomCrop(_RandomImageLayer):
    """In training, crop a random ``(height, width)`` window, one position per batch (as
    Keras 3). At inference, or when the input is not larger than the target on both axes, take
    the largest centred window with the target's aspect ratio and resize it bilinearly
    (half-pixel centres, as ``keras.ops.image.resize``) to ``(height, width)``."""
    identity_at_inference = False

    def __init__(self, height: int, width: int, seed: int | None = None,
                 data_format: DataFormat = None, **kwargs: Any) -> None:
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        for name, value in (("height", height), ("width", width)):
            if not isinstance(value, (int, np.integer)) or value <= 0:
                self._fail(f"{name} must be a positive integer, got {value!r}")
        self.height, self.width = int(height), int(width)

    def _transform(self, x, training):
        h, w = x.shape[1:3]
        if training and h > self.height and w > self.width:
            starts = []
            for stream, room in ((0, h - self.height + 1), (1, w - self.width + 1)):
                start = ops.cast(ops.cast(self._uniform(x, stream, False) * float(room),
                                          "int64"), np.float32)       # floor: u >= 0
                starts.append(ops.broadcast_like(ops.reshape(start, (1, 1)), _per_image(x)))
            self._advance()
            return ops.image_transform(x, _transforms(starts[0], [
                1.0, 0.0, starts[1], 0.0, 1.0, starts[0], 0.0, 0.0]),
                (self.height, self.width), "nearest", "nearest")
        crop_h = max(min(h, int(float(w * self.height) / self.width)), 1)
        crop_w = max(min(w, int(float(h * self.width) / self.height)), 1)
        top, left = int(float(h - crop_h) / 2), int(float(w - crop_w) / 2)
        x = ops.slice_axis(ops.slice_axis(x, 1, top, top + crop_h), 2, left, left + crop_w)
        if (crop_h, crop_w) == (self.height, self.width):
            return x
        sy, sx = crop_h / self.height, crop_w / self.width
        resize = [sx, 0.0, 0.5 * sx - 0.5, 0.0, sy, 0.5 * sy - 0.5, 0.0, 0.0]
        return ops.image_transform(x, _transforms(_per_image(x), resize),
                                   (self.height, self.width), "bilinear", "nearest")

    def get_config(self):
        return {**super().get_config(), "height": self.height, "width": self.width}


class _AffineAugmentation(_RandomImageLayer):
    def __init__(self, fill_mode: FillMode = "reflect", interpolation: Interpolation = "bilinear",
                 seed: int | None = None, fill_value: float = 0.0, data_format: DataFormat = None,
                 **kwargs: Any) -> None:
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        _check_resampling(self, fill_mode, interpolation)
        self.fill_mode, self.interpolation = fill_mode, interpolation
        self.fill_value = float(fill_value)

    def _transform(self, x, training):
        transforms = self._random_transforms(x, *x.shape[1:3])
        self._advance()
        return ops.image_transform(x, transforms, x.shape[1:3], self.interpolation,
                                   self.fill_mode, self.fill_value)

    def get_config(self):
        return {**super().get_config(), "fill_mode": self.fill_mode,
                "interpolation": self.interpolation, "fill_value": self.fill_value}


class RandomRotation(_AffineAugmentation):
    """Rotate each image about its centre by a random angle in ``factor * 2 pi`` (a number f:
    [-f, f]; a pair: [lower, upper]; positive is counter-clockwise), filling uncovered
    pixels by ``fill_mode``."""

    def __init__(self, factor: float | Sequence[float], fill_mode: FillMode = "reflect",
                 interpolation: Interpolation = "bilinear", seed: int | None = None,
                 fill_value: float = 0.0, data_format: DataFormat = None, **kwargs: Any) -> None:
        super().__init__(fill_mode, interpolation, seed, fill_value, data_format, **kwargs)
        self.factor = _factor_pair(self, "factor", factor)

    def _random_transforms(self, x, h, w):
        lower, upper = self.factor
        angle = (self._uniform(x, 0) * (upper - lower) + lower) * float(2 * np.pi)
        cos, sin = ops.cos(angle), ops.sin(angle)
        x_offset = ((w - 1) - (cos * float(w - 1) - sin * float(h - 1))) * 0.5
        y_offset = ((h - 1) - (sin * float(w - 1) + cos * float(h - 1))) * 0.5
        return _transforms(cos, [cos, -sin, x_offset, sin, cos, y_offset, 0.0, 0.0])

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


class RandomZoom(_AffineAugmentation):
    """Zoom each image about its centre: the sampled region is ``1 + f`` times the image, f
    drawn from ``height_factor`` (a number f: [-f, f]; a pair: [lower, upper]; positive zooms
    out) and, when given, independently from ``width_factor`` (else the same zoom on both
    axes, keeping the aspect ratio)."""

    def __init__(self, height_factor: float | Sequence[float],
                 width_factor: float | Sequence[float] | None = None,
                 fill_mode: FillMode = "reflect", interpolation: Interpolation = "bilinear",
                 seed: int | None = None, fill_value: float = 0.0, data_format: DataFormat = None,
                 **kwargs: Any) -> None:
        super().__init__(fill_mode, interpolation, seed, fill_value, data_format, **kwargs)
        self.height_factor = _factor_pair(self, "height_factor", height_factor, bound=1.0)
        self.width_factor = None if width_factor is None else \
            _factor_pair(self, "width_factor", width_factor, bound=1.0)

    def _random_transforms(self, x, h, w):
        def zoom(stream, factor):
            lower, upper = factor
            return self._uniform(x, stream) * (upper - lower) + (1.0 + lower)
        zy = zoom(0, self.height_factor)
        zx = zy if self.width_factor is None else zoom(1, self.width_factor)
        return _transforms(zy, [zx, 0.0, (1.0 - zx) * ((w - 1) / 2.0), 0.0, zy,
                                (1.0 - zy) * ((h - 1) / 2.0), 0.0, 0.0])

    def get_config(self):
        return {**super().get_config(), "height_factor": self.height_factor,
                "width_factor": self.width_factor}
