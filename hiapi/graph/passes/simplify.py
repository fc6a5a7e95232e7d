"""Algebraic simplification.

Local rules: ``x * 1``, ``x + 0``, ``x - 0`` -> ``x`` (when the constant changes neither shape
nor dtype); ``-(-x)`` -> ``x``; two transposes -> one (none if they cancel); two reshapes ->
one. Then linear gathering: a tree of additions, subtractions, negations and multiplications
by scalar constants is rewritten as ``c1*x1 + c2*x2 + ... + c`` with each distinct term once and
the scalars summed, e.g. ``x + 1 - 2 + x`` -> ``2*x - 1``, whenever that needs fewer ops. (The
result can differ from the original in the last bits, as any reassociation does.)
"""
from collections import Counter

import numpy as np

from hiapi.graph.ops.elementwise import Add, Multiply, Negative, Subtract
from hiapi.graph.ops.shape import Reshape, Transpose
from hiapi.graph.ops.sources import Constant
from hiapi.graph.passes.rewrite import rewrite, with_inputs
from hiapi.graph.schedule import topological_order
from hiapi.graph.var import Var


def _scalar(var):
    """The value of a size-1 constant, else None."""
    if isinstance(var.op, Constant) and var.op.value.size == 1:
        return float(var.op.value.reshape(()))
    return None


def _neutral(var, other, value):
    """``var op other`` is just ``other`` when ``var`` is the constant ``value`` that
    broadcasting leaves invisible."""
    return _scalar(var) == value and var.ndim <= other.ndim and \
        np.result_type(var.dtype, other.dtype) == other.dtype


# op -> (its neutral constant, whether the constant may stand on the left too)
NEUTRAL = {Multiply: (1.0, True), Add: (0.0, True), Subtract: (0.0, False)}


def _local(var, inputs):
    op = var.op
    if type(op) in NEUTRAL:
        value, commutes = NEUTRAL[type(op)]
        pairs = [(inputs[1], inputs[0])] + ([(inputs[0], inputs[1])] if commutes else [])
        for constant, other in pairs:
            if _neutral(constant, other, value) and other.shape == var.shape:
                return other
    if isinstance(op, Negative) and isinstance(inputs[0].op, Negative):
        return inputs[0].inputs[0]
    if isinstance(op, Transpose) and isinstance(inputs[0].op, Transpose):
        inner = inputs[0]
        axes = tuple(inner.op.axes[a] for a in op.axes)
        source = inner.inputs[0]
        return source if axes == tuple(range(len(axes))) else \
            Var(Transpose(axes), (source,), var.shape, var.dtype)
    if isinstance(op, Reshape) and isinstance(inputs[0].op, Reshape):
        return Var(op, (inputs[0].inputs[0],), var.shape, var.dtype)
    return with_inputs(var, inputs)


LINEAR = (Add, Subtract, Negative)


def _terms(var, consumers, top):
    """(coefficients by Var, constant) of the linear tree under ``var``."""
    op = var.op
    if var is not top and (consumers[var] > 1 or var.recompute):
        return {var: 1.0}, 0.0
    if isinstance(op, (Add, Subtract)):
        (ta, ca), (tb, cb) = (_terms(i, consumers, top) for i in var.inputs)
        sign = 1.0 if isinstance(op, Add) else -1.0
        terms = dict(ta)
        for k, v in tb.items():
            terms[k] = terms.get(k, 0.0) + sign * v
        return terms, ca + sign * cb
    if isinstance(op, Negative):
        terms, c = _terms(var.inputs[0], consumers, top)
        return {k: -v for k, v in terms.items()}, -c
    if isinstance(op, Multiply):
        for scale, other in (var.inputs, var.inputs[::-1]):
            if _scalar(scale) is not None and scale.ndim <= other.ndim and \
                    other.shape == var.shape:
                terms, c = _terms(other, consumers, top)
                k = _scalar(scale)
                return {t: k * v for t, v in terms.items()}, k * c
    value = _scalar(var)
    if value is not None and var.ndim == 0:
        return {}, value
    return {var: 1.0}, 0.0


def _build(terms, constant, like):
    result = None
    for term, coefficient in terms.items():
        if coefficient == 0.0:
            continue
        if result is None:
            result = term if coefficient == 1.0 else \
                (-term if coefficient == -1.0 else coefficient * term)
        elif coefficient == 1.0:
            result = result + term
        elif coefficient == -1.0:
            result = result - term
        else:
            result = result + coefficient * term
    if result is None:
        return None
    if constant:
        result = result + constant if constant > 0 else result - (-constant)
    if result.shape != like.shape or result.dtype != like.dtype:
        return None
    return result


def _gather_linear(roots):
    consumers = Counter(i for v in topological_order(roots) for i in v.inputs)
    consumers.update(roots)
    uses = {}                    # rewritten Var -> consumers of the node it replaces
    tree = {}                    # original linear node -> ops in its original linear tree

    def transform(var, inputs):
        new = with_inputs(var, inputs)
        uses[new] = consumers[var]
        if not isinstance(new.op, LINEAR + (Multiply,)) or new.recompute:
            return new
        if not isinstance(var.op, Multiply) or any(_scalar(i) is not None for i in var.inputs):
            # an inner node of the trees above it, as _terms walks them
            tree[var] = 1 + sum(tree.get(i, 0) for i in var.inputs
                                if consumers[i] == 1 and not i.recompute)
        terms, constant = _terms(new, _Uses(uses), new)
        rebuilt = _build(terms, constant, new)
        if rebuilt is None or _tree_ops(rebuilt, terms) >= tree.get(var, 1):
            return new
        uses[rebuilt] = consumers[var]
        return rebuilt
    return rewrite(roots, transform)


def _tree_ops(top, terms):
    """The ops from ``top`` down to the ``terms`` of its linear tree: what a rebuilt tree
    costs. It is weighed against the original tree's inner ops, counted once per node as the
    pass goes up; counting the whole graph under each candidate instead made the pass
    quadratic (88 s of a 110-step unrolled LSTM's 91 s compile)."""
    seen, stack = set(), [top]
    while stack:
        var = stack.pop()
        if var in terms or var in seen or var.op.is_source:
            continue
        seen.add(var)
        stack.extend(var.inputs)
    return len(seen)


class _Uses(dict):
    """Consumer counts; nodes made inside a rebuilt expression have exactly one."""

    def __init__(self, uses):
        super().__init__()
        self.uses = uses

    def __getitem__(self, var):
        return self.uses.get(var, 1)


def run(roots):
    return _gather_linear(rewrite(roots, _local))
