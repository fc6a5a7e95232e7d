"""Activation functions by Keras name; each maps a Var to a Var using graph ops."""
from hiapi.graph import ops


def linear(x):
    return x


def relu(x):
    return ops.relu(x)


def sigmoid(x):
    return ops.sigmoid(x)


def tanh(x):
    return ops.tanh(x)


def softmax(x, axis=-1):
    return ops.softmax(x, axis)


def log_softmax(x, axis=-1):
    return ops.log_softmax(x, axis)


def elu(x, alpha=1.0):
    return ops.where(x > 0, x, alpha * (ops.exp(ops.minimum(x, 0)) - 1))


def softplus(x):
    # log(1 + exp(x)) without overflow: max(x, 0) + log(1 + exp(-|x|))
    return ops.maximum(x, 0) + ops.log(1 + ops.exp(-ops.abs(x)))


def exponential(x):
    return ops.exp(x)


_BY_NAME = {f.__name__: f for f in (linear, relu, sigmoid, tanh, softmax, log_softmax, elu,
                                    softplus, exponential)}


def get(identifier):
    """An activation from a name (``"relu"``), a callable, or None (linear)."""
    if identifier is None:
        return linear
    if callable(identifier):
        return identifier
    if isinstance(identifier, str) and identifier in _BY_NAME:
        return _BY_NAME[identifier]
    raise ValueError(f"Unknown activation {identifier!r}: expected one of "
                     f"{', '.join(sorted(_BY_NAME))} or a callable")


def serialize(fn):
    return next((name for name, f in _BY_NAME.items() if f is fn), fn)
