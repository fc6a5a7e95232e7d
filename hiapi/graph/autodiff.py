"""Reverse-mode autodiff as graph extension.

``grad(y, xs)`` walks the graph from ``y`` back to ``xs`` and appends, for each op on the way,
the gradient ops its ``Op.grad`` rule builds; contributions to a Var that feeds several ops are
summed. The result is ordinary graph, so it can be compiled, optimised, or differentiated again::

    x = placeholder((3,), "float64")
    y = (x * x * x).sum()
    (dx,) = grad(y, [x])          # 3x^2
    (ddx,) = grad(dx.sum(), [x])  # 6x
"""
from hiapi.graph import ops
from hiapi.graph.schedule import topological_order


def grad(y, xs, grad_y=None, stop=()):
    """Gradients of ``y`` with respect to each of ``xs`` (None where y does not depend on it).

    ``y`` must be a scalar unless ``grad_y`` (same shape as y) is given: the result is then the
    vector-Jacobian product. Vars in ``stop`` are treated as constants (a ``GradientTape``'s
    ``stop_recording`` block).
    """
    if grad_y is None:
        if y.ndim != 0:
            raise ValueError(f"grad: y must be a scalar, got shape {y.shape}; pass grad_y "
                             f"for a vector-Jacobian product")
        grad_y = ops.constant(1.0, y.dtype)
    order = topological_order([y])
    depends = _depends_on(order, xs, stop)
    grads = {y: grad_y}
    for var in reversed(order):
        g = grads.get(var)
        if g is None or var.op.is_source or var in stop:
            continue
        for inp, gi in zip(var.inputs, var.op.grad(var.inputs, var, g)):
            if gi is None or inp not in depends:
                continue
            grads[inp] = gi if inp not in grads else grads[inp] + gi
    return [grads.get(x) for x in xs]


def _depends_on(order, xs, stop=()):
    """Vars in ``order`` whose value depends on some of ``xs`` (only those need gradients)."""
    depends = set(xs)
    for var in order:
        if var not in stop and any(inp in depends for inp in var.inputs):
            depends.add(var)
    return depends
