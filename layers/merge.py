"""Merge layers: combine a list of inputs of the same shape (Concatenate: same but one axis)."""
from functools import reduce

from hiapi.graph import ops
from hiapi.layers.layer import Layer


class _Merge(Layer):
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
    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis

    def merge(self, xs):
        try:
            return ops.concatenate(xs, self.axis)
        except ValueError as error:
            raise ValueError(f"Concatenate {self.name!r}: {error}") from None

    def get_config(self):
        return {**super().get_config(), "axis": self.axis}
