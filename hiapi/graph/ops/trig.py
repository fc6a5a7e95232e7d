"""Sine and cosine, for the ops that need angles: the rotation matrices of ``RandomRotation``
and the Box-Muller transform behind ``random_normal``.

They are not marked elementwise on purpose: the fused elementwise programs of every backend
know a fixed set of ops, and these run a handful of times per step on small arrays, so fusing
them would buy nothing. Their gradients are each other, so they differentiate to any order.
"""
from hiapi.graph.op import Op, as_var, require_float


class _Trig(Op):
    def infer(self, x):
        require_float(self.name, x)
        return x.shape, x.dtype


class Sin(_Trig):
    name = "sin"

    def grad(self, inputs, y, g):
        return [g * cos(inputs[0])]


class Cos(_Trig):
    name = "cos"

    def grad(self, inputs, y, g):
        return [-(g * sin(inputs[0]))]


def sin(x):
    return Sin()(as_var(x))


def cos(x):
    return Cos()(as_var(x))
