"""Merge layers: combine a list of inputs of the same shape (Concatenate: same but one axis)."""
from __future__ import annotations

from functools import reduce
from typing import Any

from hiapi.graph import ops
from hiapi.layers.layer import Layer


def _any(masks):
    """Elementwise OR of boolean masks."""
    return reduce(lambda a, b: ops.where(a, a, b), masks)


def _real_steps(x):
    """An all-true (batch, steps) mask for an input that carries none."""
    return ops.squeeze(ops.broadcast_like(ops.constant(True), ops.slice_axis(x, -1, 0, 1)), -1)


class _Merge(Layer):
    def compute_mask(self, inputs, previous_mask=None):
        """As Keras 3: when every input carries a mask, a step is real where it is real in
        any of them; otherwise no mask."""
        if not previous_mask or any(m is None for m in previous_mask):
            return None
        return _any(previous_mask)

    def _check(self, inputs):
        if not isinstance(inputs, (list, tuple)) or len(inputs) < 2:
            raise ValueError(f"{type(self).__name__} {self.name!r}: expected a list of at "
                             f"least 2 inputs, got {inputs!r}")
        return list(inputs)

    def call(self, inputs, training=None):
        inputs = self._check(inputs)
        shapes = {tuple(v.shape[1:]) for v in inputs}
        if len(shapes) > 1 and not isinstance(self, Concatenate):
            raise ValueError(f"{type(self).__name__} {self.name!r}: inputs must have the same "
                             f"shape, got {[v.shape for v in inputs]}")
        return self.merge(inputs)


class Add(_Merge):
    def merge(self, xs): return reduce(ops.add, xs)


class Multiply(_Merge):
    def merge(self, xs): return reduce(ops.multiply, xs)


class Average(_Merge):
    def merge(self, xs): return reduce(ops.add, xs) * (1.0 / len(xs))


class Maximum(_Merge):
    def merge(self, xs): return reduce(ops.maximum, xs)


class Minimum(_Merge):
    def merge(self, xs): return reduce(ops.minimum, xs)


class Subtract(_Merge):
    def merge(self, xs):
        if len(xs) != 2:
            raise ValueError(f"Subtract {self.name!r}: expected exactly 2 inputs, got {len(xs)}")
        return xs[0] - xs[1]


class Concatenate(_Merge):
    def __init__(self, axis: int = -1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.axis = axis

    def merge(self, xs):
        try:
            return ops.concatenate(xs, self.axis)
        except ValueError as error:
            raise ValueError(f"Concatenate {self.name!r}: {error}") from None

    def compute_mask(self, inputs, previous_mask=None):
        """As Keras 3, an input without a mask counting as all real: along the steps (axis 1)
        the masks joined, along the features their OR."""
        if not previous_mask or all(m is None for m in previous_mask):
            return None
        masks = [_real_steps(x) if m is None else m for x, m in zip(inputs, previous_mask)]
        if self.axis % inputs[0].ndim == 1 and inputs[0].ndim > 2:
            return ops.concatenate(masks, 1)
        return _any(masks)

    def get_config(self):
        return {**super().get_config(), "axis": self.axis}
