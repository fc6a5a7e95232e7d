"""How every ``hiapi.random`` function runs: one graph, built from counter-based random ops,
traced into the step inside a layer's ``call`` and run at once on arrays.

The same graph serves both, so a draw on arrays and the same draw in a compiled step give the
same numbers for the same (seed, counter). On arrays the graph is compiled once per signature
and cached (``hiapi.utils.eager``).
"""
from __future__ import annotations

import numpy as np

from hiapi.graph import ops as O
from hiapi.graph import tracing
from hiapi.graph.var import Var
from hiapi.random.seed_generator import resolve
from hiapi.utils.eager import run_eagerly


def sample(what, build, tensors, seed, params):
    """``build(seed, counter, *tensors)`` (graph ops) for the ``seed`` argument: symbolic
    inside a trace or on symbolic tensors, else evaluated on the arrays. ``params`` are the
    static arguments ``build`` closes over (they key the compiled graph on arrays)."""
    seed, counter = resolve(seed, what)
    if tracing.in_trace() or any(isinstance(t, Var) for t in tensors):
        counter = counter if isinstance(counter, Var) else O.constant(np.int64(counter))
        return build(seed, counter, *[t if isinstance(t, Var) else O.constant(np.asarray(t))
                                      for t in tensors])
    return run_eagerly(lambda c, *ts: build(seed, c, *ts), [np.int64(counter), *tensors],
                       key=(what, seed, params))


def check_shape(shape, what):
    """``shape`` as a tuple of non-negative ints; the first entry may be None (the batch,
    taken from the layer being called)."""
    try:
        shape = (int(shape),) if isinstance(shape, (int, np.integer)) else \
            tuple(None if d is None else _dim(d) for d in shape)
    except (TypeError, ValueError):
        raise ValueError(f"{what}: shape must be a tuple of non-negative integers, got "
                         f"{shape!r}") from None
    if any(d is None for d in shape[1:]) or any(d is not None and d < 0 for d in shape):
        raise ValueError(f"{what}: shape must be a tuple of non-negative integers (only the "
                         f"first, the batch, may be None inside a layer's call), got {shape}")
    return shape


def _dim(d):
    if isinstance(d, bool) or not float(d).is_integer():
        raise ValueError(d)
    return int(d)


def like(shape, what):
    """A tensor of ``shape`` whose values are not read: what the random ops take their output
    shape from. A None first axis is the batch of the layer being called."""
    if not shape or shape[0] is not None:
        return O.constant(np.zeros(shape, np.bool_))
    source = tracing.batch_source()
    if source is None or not tracing.in_trace():
        raise ValueError(f"{what}: shape {shape} has an unknown first (batch) axis, which "
                         f"hiapi takes from the inputs of the layer being called; outside a "
                         f"layer's call give every dimension")
    column = source[(slice(None),) + (0,) * (source.ndim - 1)]          # (batch,), a view
    column = O.reshape(column, (-1,) + (1,) * (len(shape) - 1))
    return O.less(column, O.constant(np.zeros((1,) + shape[1:], source.dtype)))


def check_dtype(dtype, kinds, what, default):
    """The dtype as a numpy dtype, refused unless its kind is among ``kinds`` ("f" or "iu")."""
    try:
        resolved = np.dtype(default if dtype is None else dtype)
    except TypeError:
        raise ValueError(f"{what}: unknown dtype {dtype!r}") from None
    if resolved.kind not in kinds:
        expected = "a floating point" if kinds == "f" else "an integer"
        raise ValueError(f"{what} requires {expected} dtype, got dtype={dtype!r}")
    return resolved


def check_number(value, name, what):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{what}: {name} must be a Python or numpy number, got {value!r}")
    return value
