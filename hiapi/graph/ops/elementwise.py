"""Elementwise ops: unary maths, binary arithmetic with numpy broadcasting, comparisons, where.

Binary gradients are reduced back to each input's shape with ``unbroadcast``, so ``x + b`` with
b of shape (n,) and x of shape (batch, n) gives b a gradient of shape (n,).
"""
import numpy as np

from hiapi.runtime.dtypes import as_dtype, is_float
from hiapi.graph.op_namespace import ops as O
from hiapi.graph.op import Op, as_vars, broadcast_shapes, require_float, result_dtype


class Unary(Op):
    elementwise = True
    float_only = True

    def infer(self, x):
        if self.float_only:
            require_float(self.name, x)
        return x.shape, x.dtype


class Negative(Unary):
    name = "negative"
    inplace = True
    float_only = False
    def grad(self, inputs, y, g): return [-g]


class Exp(Unary):
    name = "exp"
    inplace = True
    def grad(self, inputs, y, g): return [g * y]


class Log(Unary):
    name = "log"
    inplace = True
    def grad(self, inputs, y, g): return [g / inputs[0]]


class Sqrt(Unary):
    name = "sqrt"
    inplace = True
    def grad(self, inputs, y, g): return [g * 0.5 / y]


class Tanh(Unary):
    name = "tanh"
    inplace = True
    def grad(self, inputs, y, g): return [g * (1.0 - y * y)]


class Sigmoid(Unary):
    name = "sigmoid"
    def grad(self, inputs, y, g): return [g * y * (1.0 - y)]


class Relu(Unary):
    name = "relu"
    inplace = True
    float_only = False
    # from the output (y > 0 exactly where x > 0): the input then has one reader, so the bias
    # add before it fuses with the relu, and x's buffer is free once y is computed
    def grad(self, inputs, y, g): return [where(y > 0, g, 0)]


class Abs(Unary):
    name = "abs"
    inplace = True
    float_only = False
    def grad(self, inputs, y, g): return [where(inputs[0] >= 0, g, -g)]


class StopGradient(Unary):
    """Identity whose gradient is zero: cuts a value out of differentiation."""
    name = "stop_gradient"
    float_only = False
    view_of = 0
    def grad(self, inputs, y, g): return [None]


class Cast(Unary):
    name = "cast"
    float_only = False

    def __init__(self, dtype):
        self.dtype = as_dtype(dtype)

    def infer(self, x):
        return x.shape, self.dtype

    def grad(self, inputs, y, g):
        x = inputs[0]      # float to float: the gradient goes back in the input's type
        return [cast(g, x.dtype) if is_float(x.dtype) and is_float(self.dtype) else None]


class Binary(Op):
    elementwise = True
    inplace = True

    def infer(self, a, b):
        return broadcast_shapes(self.name, a.shape, b.shape), result_dtype(a, b)


class Add(Binary):
    name = "add"
    def grad(self, inputs, y, g):
        a, b = inputs
        return [O.unbroadcast(g, a), O.unbroadcast(g, b)]


class Subtract(Binary):
    name = "subtract"
    def grad(self, inputs, y, g):
        a, b = inputs
        return [O.unbroadcast(g, a), O.unbroadcast(-g, b)]


class Multiply(Binary):
    name = "multiply"
    def grad(self, inputs, y, g):
        a, b = inputs
        return [O.unbroadcast(g * b, a), O.unbroadcast(g * a, b)]


class Divide(Binary):
    name = "divide"

    def infer(self, a, b):
        shape, dtype = super().infer(a, b)
        return shape, dtype if dtype.kind == "f" else np.dtype(np.float64)

    def grad(self, inputs, y, g):
        a, b = inputs
        return [O.unbroadcast(g / b, a), O.unbroadcast(-g * y / b, b)]


class Power(Binary):
    name = "power"
    def grad(self, inputs, y, g):
        a, b = inputs
        return [O.unbroadcast(g * b * a ** (b - 1), a),
                O.unbroadcast(g * log(a) * y, b)]


class Maximum(Binary):
    name = "maximum"
    def grad(self, inputs, y, g):
        a, b = inputs
        return [O.unbroadcast(where(a >= b, g, 0), a),
                O.unbroadcast(where(a >= b, 0, g), b)]


class Minimum(Binary):
    name = "minimum"
    def grad(self, inputs, y, g):
        a, b = inputs
        return [O.unbroadcast(where(a <= b, g, 0), a),
                O.unbroadcast(where(a <= b, 0, g), b)]


class Compare(Binary):
    """Comparisons give booleans and have no gradient."""
    inplace = False
    def infer(self, a, b):
        return broadcast_shapes(self.name, a.shape, b.shape), np.dtype(bool)

    def grad(self, inputs, y, g):
        return [None, None]


class Greater(Compare): name = "greater"
class GreaterEqual(Compare): name = "greater_equal"
class Less(Compare): name = "less"
class LessEqual(Compare): name = "less_equal"
class Equal(Compare): name = "equal"
class NotEqual(Compare): name = "not_equal"


class Where(Op):
    """``where(cond, a, b)``: a where cond is true, else b (numpy broadcasting)."""
    name = "where"
    elementwise = True
    inplace = True

    def infer(self, cond, a, b):
        if cond.dtype != np.dtype(bool):
            raise TypeError(f"where: condition must be boolean, got dtype {cond.dtype.name}")
        return broadcast_shapes("where", cond.shape, a.shape, b.shape), result_dtype(a, b)

    def grad(self, inputs, y, g):
        cond, a, b = inputs
        return [None, O.unbroadcast(where(cond, g, 0), a),
                O.unbroadcast(where(cond, 0, g), b)]


def _unary(cls):
    return lambda x: cls()(*as_vars(x))


def _binary(cls):
    return lambda a, b: cls()(*as_vars(a, b))


negative, exp, log, sqrt = _unary(Negative), _unary(Exp), _unary(Log), _unary(Sqrt)
tanh, relu, abs = _unary(Tanh), _unary(Relu), _unary(Abs)
stop_gradient = _unary(StopGradient)
add, subtract, multiply, divide = _binary(Add), _binary(Subtract), _binary(Multiply), _binary(Divide)
power, maximum, minimum = _binary(Power), _binary(Maximum), _binary(Minimum)
greater, greater_equal, less = _binary(Greater), _binary(GreaterEqual), _binary(Less)
less_equal, equal, not_equal = _binary(LessEqual), _binary(Equal), _binary(NotEqual)


def where(cond, a, b):
    return Where()(*as_vars(cond), *as_vars(a, b))


def cast(x, dtype):
    x = as_vars(x)[0]
    return x if x.dtype == as_dtype(dtype) else Cast(dtype)(x)


def sigmoid(x):
    (x,) = as_vars(x)
    y = Sigmoid()(x)
    y._keras_logits = x   # lets binary cross-entropy use the stable from-logits form
    return y


def square(x):
    return multiply(x, x)
