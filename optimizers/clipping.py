"""Gradient clipping as graph ops, with Keras's definitions (``clipnorm``, ``clipvalue``,
``global_clipnorm``)."""
from hiapi.graph import ops


def l2_norm(x):
    return ops.sqrt(ops.sum(ops.square(x)))


def clip_by_norm(g, clip_norm):
    """``g * clip_norm / max(||g||, clip_norm)``: unchanged while its norm is within bounds."""
    return g * (clip_norm / ops.maximum(l2_norm(g), clip_norm))


def clip_by_value(g, limit):
    return ops.minimum(ops.maximum(g, -limit), limit)


def clip_by_global_norm(grads, clip_norm):
    """Scale all gradients together so their joint L2 norm is at most ``clip_norm``."""
    total = None
    for g in grads:
        term = ops.sum(ops.square(ops.cast(g, "float32")))
        total = term if total is None else total + term
    scale = clip_norm / ops.maximum(ops.sqrt(total), clip_norm)
    return [g * ops.cast(scale, g.dtype) for g in grads]
