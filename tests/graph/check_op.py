"""``check_op``: the one helper every op test goes through (Chainer's ``check_backward`` style).

For a graph built from placeholders it checks, on the current backend:

1. the statically inferred shape and dtype against what running the graph gives;
2. the forward values against a plain-numpy reference written in the test;
3. the gradient of ``sum(output * cotangent)`` (a random cotangent) with respect to every float
   input against float64 central finite differences, and that each gradient has its input's
   shape and dtype (so broadcasting was summed back);
4. with ``double=True``, the second derivative: the gradient of ``sum(grad_i * v_i)`` (random
   ``v_i``) with respect to the inputs and the cotangent, against finite differences of the
   compiled first-order gradients::

    check_op(ops.tanh, [np.linspace(-2, 2, 12).reshape(3, 4)], np.tanh, batch=True, double=True)

Nothing here names a backend: ``Function`` compiles on whichever backend is current, so the same
tests run on every backend. What a backend cannot run yet is listed, with why, in ``SKIPS``.
"""
import numpy as np
import pytest

from hiapi.backends import get_backend
from hiapi.graph import Function, grad, placeholder
from hiapi.graph.schedule import topological_order

# backend name -> {op name: why that backend skips it}; the one place skips are listed
SKIPS = {}


def check_op(build, inputs, reference=None, grad_inputs=None, *, batch=False, double=False,
             atol=1e-6, rtol=1e-5, eps=1e-6, seed=0):
    """Check ``build`` (``build(*vars) -> Var``) at ``inputs``; returns the forward output.

    ``grad_inputs``: indices of the inputs to differentiate (default: every float input; an
    empty tuple checks the forward only). ``batch``: give axis 0 of the placeholders the
    symbolic size None (True for all inputs of rank >= 1, or one bool per input).
    """
    inputs = [np.array(a) for a in inputs]
    flags = [batch] * len(inputs) if isinstance(batch, bool) else list(batch)
    xs = [placeholder(_symbolic(a.shape, b), a.dtype, name=f"input{i}")
          for i, (a, b) in enumerate(zip(inputs, flags))]
    y = build(*xs)
    _skip_gaps([y])
    forward = Function(xs, y, name="forward")
    out = forward(*inputs)
    _check_value("forward output", y, out)
    if reference is not None:
        expected = np.asarray(reference(*inputs))
        assert out.shape == expected.shape, f"forward: shape {out.shape}, reference " \
                                            f"{expected.shape}"
        _assert_close("forward", out, expected, atol, rtol)

    wrt = _differentiable(inputs, y, grad_inputs)
    if not wrt:
        return out
    rng = np.random.default_rng(seed)
    cotangent = np.asarray(rng.standard_normal(out.shape), dtype=y.dtype)
    gy = placeholder(y.shape, y.dtype, name="cotangent")
    first = grad(y, [xs[i] for i in wrt], grad_y=gy)
    backward = _Compiled(xs + [gy], first, [inputs[i] for i in wrt], "backward")
    grads = backward(*inputs, cotangent)
    for i, g, gvar in zip(wrt, grads, first):
        if gvar is not None:
            _check_value(f"gradient of input {i}", gvar, g, like=inputs[i])

    fed = inputs + [cotangent]

    def weighted_sum(arrays):
        return np.sum(forward(*arrays[:-1]).astype(np.float64) * arrays[-1])
    for i, g in zip(wrt, grads):
        _assert_close(f"gradient of input {i}", g, _numeric(weighted_sum, fed, i, eps),
                      atol, rtol)
    if double:
        _check_double(xs, gy, first, wrt, fed, rng, eps, atol, rtol)
    return out


def _check_double(xs, gy, first, wrt, fed, rng, eps, atol, rtol):
    """Gradient of h = sum_i <grad_i, v_i> w.r.t. inputs and cotangent vs finite differences."""
    pairs = [(g, i) for g, i in zip(first, wrt) if g is not None]
    if not pairs:
        return
    vs = [rng.standard_normal(fed[i].shape) for _, i in pairs]
    v_vars = [placeholder(xs[i].shape, fed[i].dtype, name=f"v{i}") for _, i in pairs]
    h = sum((g * v).sum() for (g, _), v in zip(pairs, v_vars))
    targets = wrt + [len(xs)]   # the inputs, then the cotangent
    every = xs + [gy]
    second = _Compiled(every + v_vars, grad(h, [every[i] for i in targets]),
                       [fed[i] for i in targets], "double backward")
    analytic = second(*fed, *vs)
    objective = Function(every + v_vars, h, name="double backward objective")
    for i, g in zip(targets, analytic):
        numeric = _numeric(lambda arrays: float(objective(*arrays, *vs)), fed, i, eps)
        what = "the cotangent" if i == len(xs) else f"input {i}"
        _assert_close(f"second derivative w.r.t. {what}", g, numeric, atol, rtol)


class _Compiled:
    """Gradient Vars compiled into one Function; None gradients come back as zeros."""

    def __init__(self, inputs, grads, likes, label):
        self.grads, self.likes = grads, likes
        present = [g for g in grads if g is not None]
        _skip_gaps(present)
        self.function = Function(inputs, present, name=label) if present else None

    def __call__(self, *arrays):
        values = iter(self.function(*arrays) if self.function else [])
        return [np.zeros(like.shape, like.dtype) if g is None else next(values)
                for g, like in zip(self.grads, self.likes)]


def _numeric(f, arrays, index, eps):
    """Central differences of the scalar ``f(arrays)`` with respect to ``arrays[index]``."""
    arrays = [a.copy() for a in arrays]
    x = arrays[index]
    out = np.zeros(x.shape, np.float64)
    for idx in np.ndindex(*x.shape):
        orig = x[idx]
        x[idx] = orig + eps
        up = f(arrays)
        x[idx] = orig - eps
        down = f(arrays)
        x[idx] = orig
        out[idx] = (up - down) / (2 * eps)
    return out


def _differentiable(inputs, y, grad_inputs):
    if grad_inputs is None:
        if y.dtype.kind != "f":
            return []
        grad_inputs = [i for i, a in enumerate(inputs) if a.dtype.kind == "f"]
    elif grad_inputs and y.dtype.kind != "f":
        raise ValueError(f"check_op: the output has dtype {y.dtype}, which has no gradient")
    for i in grad_inputs:
        if inputs[i].dtype != np.float64:
            raise ValueError(f"check_op: input {i} has dtype {inputs[i].dtype}; finite "
                             f"differences need float64")
    return list(grad_inputs)


def _symbolic(shape, batch):
    return (None,) + tuple(shape[1:]) if batch and len(shape) else tuple(shape)


def _check_value(what, var, array, like=None):
    """The array a Var computed agrees with the Var's static shape/dtype (and with ``like``)."""
    backend = get_backend().name
    assert len(var.shape) == array.ndim and all(
        s is None or s == a for s, a in zip(var.shape, array.shape)), \
        f"{what} on {backend}: inferred shape {var.shape}, computed {array.shape}"
    assert array.dtype == var.dtype, \
        f"{what} on {backend}: inferred dtype {var.dtype}, computed {array.dtype}"
    if like is not None:
        assert array.shape == like.shape and array.dtype == like.dtype, \
            f"{what} on {backend}: shape {array.shape} dtype {array.dtype}, but the input has " \
            f"shape {like.shape} dtype {like.dtype}"


def _assert_close(what, actual, expected, atol, rtol):
    np.testing.assert_allclose(actual, expected, atol=atol, rtol=rtol,
                               err_msg=f"{what} on backend {get_backend().name!r}")


def _skip_gaps(outputs):
    backend = get_backend().name
    gaps = SKIPS.get(backend, {})
    for var in topological_order(outputs):
        if var.op.name in gaps:
            pytest.skip(f"backend {backend!r} skips op {var.op.name!r}: {gaps[var.op.name]}")
