"""``Dot``: dot products between the samples of two tensors (Keras's ``batch_dot``).

For inputs of shapes (batch, n) and (batch, n) with ``axes=1`` the output is (batch, 1); for
(batch, m, k) and (batch, n, k) with ``axes=2`` it is (batch, m, n) (attention scores).
``normalize=True`` divides each vector by its L2 norm first, giving cosine similarities.
"""
from __future__ import annotations

from typing import Any, Sequence

from hiapi.graph import ops
from hiapi.layers.layer import Layer


class Dot(Layer):
    def compute_mask(self, inputs, previous_mask=None):
        return None          # as Keras: the product has no steps left to mask

    def __init__(self, axes: int | Sequence[int], normalize: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if isinstance(axes, int):
            axes = (axes, axes)
        if not (isinstance(axes, (list, tuple)) and len(axes) == 2
                and all(isinstance(a, int) for a in axes)):
            raise ValueError(f"Dot {self.name!r}: axes must be an int or a pair of ints, got "
                             f"{axes!r}")
        self.axes = tuple(axes)
        self.normalize = bool(normalize)

    def call(self, inputs, training=None):
        if not isinstance(inputs, (list, tuple)) or len(inputs) != 2:
            raise ValueError(f"Dot {self.name!r}: expected a list of 2 inputs, got {inputs!r}")
        x, y = inputs
        if not (2 <= x.ndim <= 3 and 2 <= y.ndim <= 3):
            raise ValueError(f"Dot {self.name!r}: inputs must have rank 2 or 3 (batch axis "
                             f"included), got shapes {x.shape} and {y.shape}")
        ax, ay = (a % v.ndim for a, v in zip(self.axes, (x, y)))
        if 0 in (ax, ay):
            raise ValueError(f"Dot {self.name!r}: cannot take the dot product over the batch "
                             f"axis (axes={self.axes})")
        if x.shape[ax] is not None and y.shape[ay] is not None and x.shape[ax] != y.shape[ay]:
            raise ValueError(f"Dot {self.name!r}: axis {ax} of {x.shape} and axis {ay} of "
                             f"{y.shape} differ in size ({x.shape[ax]} != {y.shape[ay]})")
        if self.normalize:
            x, y = _l2_normalize(x, ax), _l2_normalize(y, ay)
        return batch_dot(x, y, ax, ay)

    def get_config(self):
        return {**super().get_config(), "axes": list(self.axes), "normalize": self.normalize}


def _l2_normalize(x, axis):
    return x / ops.sqrt(ops.maximum(ops.sum(x * x, axis, keepdims=True), 1e-12))


def batch_dot(x, y, ax, ay):
    """Per sample, contract axis ``ax`` of x with axis ``ay`` of y (ranks 2 or 3)."""
    if x.ndim == 2 and y.ndim == 2:
        return ops.sum(x * y, -1, keepdims=True)
    a = ops.expand_dims(x, 1) if x.ndim == 2 else (x if ax == 2 else ops.swapaxes(x, 1, 2))
    b = ops.expand_dims(y, 2) if y.ndim == 2 else (y if ay == 1 else ops.swapaxes(y, 1, 2))
    out = ops.matmul(a, b)                    # (batch, m, n)
    if x.ndim == 2:
        out = ops.squeeze(out, 1)
    elif y.ndim == 2:
        out = ops.squeeze(out, 2)
    return out
