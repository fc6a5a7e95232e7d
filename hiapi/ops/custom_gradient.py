"""``ops.custom_gradient`` (Keras 3's) and ``ops.check_gradient``, the finite-difference
check to run on it.

A decorated function returns its result and a function giving the gradients of its tensor
inputs from the upstream gradient; the result is one op to autodiff (``CustomGradient``), so
the backward is the user's, e.g. a numerically stable one::

    @ops.custom_gradient
    def log1pexp(x):
        e = ops.exp(x)
        def grad(*args, upstream=None):
            if upstream is None:
                (upstream,) = args
            return upstream * (1.0 - 1.0 / (1.0 + e))
        return ops.log(1.0 + e), grad

    ops.check_gradient(log1pexp, np.array([0.5, -2.0, 3.0]))   # raises if the rule is wrong
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from hiapi.graph import Function, grad, placeholder
from hiapi.graph.ops.custom_gradient import CustomGradient
from hiapi.graph.var import Var


def custom_gradient(f: Callable[..., Any]) -> Callable[..., Any]:
    """Decorator: ``f(*args)`` returns ``(y, grad_fn)``; ``grad_fn(upstream)`` returns one
    gradient per tensor argument (a tensor for one). On arrays, ``f``'s result is returned."""
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        y, grad_fn = f(*args, **kwargs)
        tensors = [a for a in args if isinstance(a, Var)]
        if not isinstance(y, Var):
            return y
        return CustomGradient(grad_fn, getattr(f, "__name__", "custom_gradient"))(y, *tensors)
    return wrapper


def check_gradient(f: Callable[..., Any], *inputs: Any, eps: float = 1e-6, rtol: float = 1e-4,
                   atol: float = 1e-6, seed: int = 0) -> float:
    """Compare ``f``'s gradients (a custom one included) with central finite differences in
    float64, along a random projection of the output; raises ``AssertionError`` naming the
    input and the worst element when they differ, else returns the largest error."""
    arrays = [np.asarray(x, np.float64) for x in inputs]
    holders = [placeholder(a.shape, "float64") for a in arrays]
    y = f(*holders)
    weights = np.random.default_rng(seed).normal(size=y.shape)
    target = (y * weights).sum()
    analytic = Function(holders, [target] + [g if g is not None else target * 0.0
                                             for g in grad(target, holders)])
    value = lambda values: float(analytic(*values)[0])
    worst = 0.0
    for k, array in enumerate(arrays):
        computed = np.asarray(analytic(*arrays)[1 + k], np.float64)
        numeric = np.zeros_like(array)
        for index in np.ndindex(array.shape):
            plus, minus = [a.copy() for a in arrays], [a.copy() for a in arrays]
            plus[k][index] += eps
            minus[k][index] -= eps
            numeric[index] = (value(plus) - value(minus)) / (2 * eps)
        error = np.abs(computed - numeric)
        bad = error > atol + rtol * np.abs(numeric)
        if np.any(bad):
            at = tuple(int(i) for i in np.argwhere(bad)[0])
            raise AssertionError(f"check_gradient({getattr(f, '__name__', f)}): input {k} at "
                                 f"{at}: gradient {computed[at]!r}, finite differences "
                                 f"{numeric[at]!r}")
        worst = max(worst, float(error.max(initial=0.0)))
    return worst
