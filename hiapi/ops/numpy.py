"""The numpy-like part of ``keras.ops``: arithmetic, comparisons, reductions, shapes, creation.

Each function works on symbolic tensors (building ``hiapi.graph.ops``) and on arrays or Python
numbers (computing with numpy now); signatures and defaults are ``keras.ops``'s::

    def call(self, inputs):
        return ops.mean(ops.square(inputs), axis=-1, keepdims=True)
"""
import numpy as np

from hiapi.graph import ops as O, step_recording
from hiapi.ops.core import eager, eager_array, graph_operand, is_symbolic, standardize_dtype


def _unary(name, graph_fn, numpy_fn):
    def op(x):
        return graph_fn(x) if is_symbolic(x) else np.asarray(numpy_fn(eager_array(x)))
    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"Elementwise ``{name}(x)``."
    return op


def _binary(name, graph_fn, numpy_fn):
    def op(x1, x2):
        if is_symbolic(x1, x2):
            return graph_fn(x1, x2)
        return np.asarray(numpy_fn(eager(x1), eager(x2)))
    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"Elementwise ``{name}(x1, x2)`` with numpy broadcasting."
    return op


add = _binary("add", O.add, np.add)
subtract = _binary("subtract", O.subtract, np.subtract)
multiply = _binary("multiply", O.multiply, np.multiply)
divide = _binary("divide", O.divide, np.true_divide)
true_divide = divide
power = _binary("power", O.power, np.power)
maximum = _binary("maximum", O.maximum, np.maximum)
minimum = _binary("minimum", O.minimum, np.minimum)
equal = _binary("equal", O.equal, np.equal)
not_equal = _binary("not_equal", O.not_equal, np.not_equal)
greater = _binary("greater", O.greater, np.greater)
greater_equal = _binary("greater_equal", O.greater_equal, np.greater_equal)
less = _binary("less", O.less, np.less)
less_equal = _binary("less_equal", O.less_equal, np.less_equal)
logical_and = _binary("logical_and", lambda a, b: O.where(_bool(a), _bool(b), False),
                      np.logical_and)
logical_or = _binary("logical_or", lambda a, b: O.where(_bool(a), True, _bool(b)),
                     np.logical_or)

negative = _unary("negative", O.negative, np.negative)
abs = _unary("abs", O.abs, np.abs)
absolute = abs
exp = _unary("exp", O.exp, np.exp)
log = _unary("log", O.log, np.log)
sqrt = _unary("sqrt", O.sqrt, np.sqrt)
square = _unary("square", O.square, np.square)
tanh = _unary("tanh", O.tanh, np.tanh)
reciprocal = _unary("reciprocal", lambda x: O.divide(1.0, x), np.reciprocal)
sign = _unary("sign", lambda x: O.where(x > 0, 1, O.where(x < 0, -1, 0)), np.sign)
logical_not = _unary("logical_not", lambda x: O.equal(_bool(x), False), np.logical_not)


def _bool(x):
    return O.cast(x, bool) if getattr(x, "dtype", None) != np.dtype(bool) else x


def _reduction(name, graph_fn, numpy_fn):
    def op(x, axis=None, keepdims=False):
        if is_symbolic(x):
            return graph_fn(graph_operand(x), axis, keepdims)
        return np.asarray(numpy_fn(eager_array(x), axis=_axis(axis), keepdims=keepdims))
    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"``{name}`` over ``axis`` (None: all axes); ``keepdims`` keeps them as 1."
    return op


def _axis(axis):
    return tuple(axis) if isinstance(axis, list) else axis


sum = _reduction("sum", O.sum, np.sum)
mean = _reduction("mean", O.mean, np.mean)
max = _reduction("max", O.max, np.max)
min = _reduction("min", O.min, np.min)
amax, amin = max, min
prod = _reduction("prod", O.prod, np.prod)
var = _reduction("var", O.var, np.var)
std = _reduction("std", O.std, np.std)


def argmax(x, axis=None, keepdims=False):
    """Index of the largest value along ``axis`` (None: of the flattened array)."""
    return _arg(O.argmax, np.argmax, x, axis, keepdims)


def argmin(x, axis=None, keepdims=False):
    return _arg(O.argmin, np.argmin, x, axis, keepdims)


def _arg(graph_fn, numpy_fn, x, axis, keepdims):
    if not is_symbolic(x):
        return np.asarray(numpy_fn(eager_array(x), axis=axis, keepdims=keepdims))
    out = graph_fn(x, axis)
    if keepdims:
        out = O.reshape(out, [1] * x.ndim) if axis is None else O.expand_dims(out, axis)
    return out


def matmul(x1, x2):
    """numpy's ``matmul``: leading axes broadcast; a 1-D operand is a row or column vector."""
    if not is_symbolic(x1, x2):
        return np.asarray(np.matmul(eager(x1), eager(x2)))
    x1, x2 = graph_operand(x1), graph_operand(x2)
    a = O.expand_dims(x1, 0) if x1.ndim == 1 else x1
    b = O.expand_dims(x2, -1) if x2.ndim == 1 else x2
    out = O.matmul(a, b)
    if x2.ndim == 1:
        out = O.squeeze(out, -1)
    if x1.ndim == 1:
        out = O.squeeze(out, -2 if x2.ndim > 1 else -1)
    return out


def dot(x1, x2):
    """numpy's ``dot``: vector inner product, matrix product, or a sum over the last axis of
    ``x1`` and the second-to-last of ``x2``. Symbolic ``x2`` may have rank 1 or 2."""
    if not is_symbolic(x1, x2):
        return np.asarray(np.dot(eager(x1), eager(x2)))
    x1, x2 = graph_operand(x1), graph_operand(x2)
    if x1.ndim == 0 or x2.ndim == 0:
        return O.multiply(x1, x2)
    if x2.ndim == 1:
        return O.sum(x1 * x2, -1)
    if x2.ndim == 2:
        return matmul(x1, x2)
    raise ValueError(f"dot: on symbolic tensors the second operand must have rank <= 2, got "
                     f"shape {x2.shape}; use ops.matmul for batched products")


def reshape(x, newshape):
    if not is_symbolic(x):
        return np.reshape(eager_array(x), newshape)
    newshape = (newshape,) if isinstance(newshape, int) else tuple(newshape)
    return O.reshape(x, tuple(-1 if d is None else d for d in newshape))


def transpose(x, axes=None):
    return O.transpose(x, axes) if is_symbolic(x) else np.transpose(eager_array(x), axes)


def swapaxes(x, axis1, axis2):
    return O.swapaxes(x, axis1, axis2) if is_symbolic(x) else \
        np.swapaxes(eager_array(x), axis1, axis2)


def expand_dims(x, axis):
    return O.expand_dims(x, axis) if is_symbolic(x) else \
        np.expand_dims(eager_array(x), _axis(axis))


def squeeze(x, axis=None):
    """Remove size-1 axes: those in ``axis``, or all of them (known statically) when None."""
    if not is_symbolic(x):
        return np.squeeze(eager_array(x), _axis(axis))
    if axis is None:
        axis = tuple(i for i, d in enumerate(x.shape) if d == 1)
    return O.squeeze(x, axis) if axis != () else x


def concatenate(xs, axis=0):
    """Join a list of tensors along an existing axis (Keras's default is axis 0)."""
    if is_symbolic(xs):
        return xs[0] if len(xs) == 1 else O.concatenate(list(xs), axis)
    return np.concatenate([eager_array(x) for x in xs], axis)


def stack(x, axis=0):
    if is_symbolic(x):
        return O.stack(list(x), axis)
    return np.stack([eager_array(v) for v in x], axis)


def split(x, indices_or_sections, axis=0):
    if not is_symbolic(x):
        return np.split(eager_array(x), indices_or_sections, axis)
    if isinstance(indices_or_sections, int):
        return O.split(x, indices_or_sections, axis)
    bounds = [0] + list(indices_or_sections) + [x.shape[axis]]
    return O.split(x, [b - a for a, b in zip(bounds, bounds[1:])], axis)


def where(condition, x1=None, x2=None):
    """``x1`` where ``condition`` holds, else ``x2``; with one argument, the indices where it
    holds (only on data: their number is not known before the graph runs)."""
    if (x1 is None) != (x2 is None):
        raise ValueError("where: give both x1 and x2, or neither")
    if x1 is None:
        if is_symbolic(condition):
            raise ValueError("where(condition) with one argument returns a data-dependent "
                             "number of indices, which a symbolic tensor cannot hold; pass "
                             "x1 and x2")
        return np.nonzero(eager_array(condition))
    if is_symbolic(condition, x1, x2):
        return O.where(_bool(condition), x1, x2)
    return np.asarray(np.where(eager_array(condition), eager(x1), eager(x2)))


def clip(x, x_min, x_max):
    if is_symbolic(x, x_min, x_max):
        return O.clip(x, x_min, x_max)
    return np.asarray(np.clip(eager_array(x), x_min, x_max))


def _created(array):
    """A new array; inside a traced step (a custom ``train_step``, a ``hiapi.function``) a
    tensor of the step, as Keras's are, so ``labels += noise`` with a symbolic ``noise`` adds
    in the graph rather than into a numpy buffer."""
    return O.constant(array) if step_recording.active() is not None else array


def ones(shape, dtype=None):
    return _created(np.ones(shape, standardize_dtype(dtype)))


def zeros(shape, dtype=None):
    return _created(np.zeros(shape, standardize_dtype(dtype)))


def full(shape, fill_value, dtype=None):
    return _created(np.full(shape, fill_value, standardize_dtype(dtype)))


def full_like(x, fill_value, dtype=None):
    """An array shaped like ``x`` filled with ``fill_value`` (``x``'s dtype unless given)."""
    if is_symbolic(x):
        dtype = standardize_dtype(dtype) if dtype is not None else x.dtype
        return O.broadcast_like(O.constant(np.array(fill_value, dtype)), x)
    x = eager_array(x)
    return np.full_like(x, fill_value, dtype=None if dtype is None else standardize_dtype(dtype))


def ones_like(x, dtype=None):
    return full_like(x, 1, dtype)


def zeros_like(x, dtype=None):
    return full_like(x, 0, dtype)


def arange(start, stop=None, step=1, dtype=None):
    """numpy's ``arange``; integer arguments give int32, as in Keras, unless ``dtype``."""
    if dtype is None:
        numbers = [v for v in (start, stop, step) if v is not None]
        dtype = "int32" if all(isinstance(v, (int, np.integer)) for v in numbers) else None
    return np.arange(start, stop, step, dtype=standardize_dtype(dtype))


def size(x):
    if is_symbolic(x):
        if None in x.shape:
            return O.size(x, dtype="int64")
        return int(np.prod(x.shape))
    return int(np.size(x))
