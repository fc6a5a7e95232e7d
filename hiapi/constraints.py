"""Weight constraints with Keras's names, applied to a weight's new value after each update."""
from hiapi.graph import ops


class Constraint:
    def __call__(self, w):
        raise NotImplementedError

    def get_config(self):
        return dict(vars(self))


def _norms(w, axis):
    return ops.sqrt(ops.sum(ops.square(w), axis=axis, keepdims=True))


class MaxNorm(Constraint):
    """Rescale each slice along ``axis`` whose L2 norm exceeds ``max_value``."""

    def __init__(self, max_value=2, axis=0):
        self.max_value, self.axis = max_value, axis

    def __call__(self, w):
        norms = _norms(w, self.axis)
        desired = ops.minimum(norms, self.max_value)
        return w * (desired / (norms + 1e-7))


class NonNeg(Constraint):
    def __call__(self, w):
        return ops.maximum(w, 0)


class UnitNorm(Constraint):
    def __init__(self, axis=0):
        self.axis = axis

    def __call__(self, w):
        return w / (_norms(w, self.axis) + 1e-7)


class MinMaxNorm(Constraint):
    def __init__(self, min_value=0.0, max_value=1.0, rate=1.0, axis=0):
        self.min_value, self.max_value, self.rate, self.axis = min_value, max_value, rate, axis

    def __call__(self, w):
        norms = _norms(w, self.axis)
        desired = self.rate * ops.minimum(ops.maximum(norms, self.min_value), self.max_value) + \
            (1 - self.rate) * norms
        return w * (desired / (norms + 1e-7))


_BY_NAME = {"max_norm": MaxNorm, "non_neg": NonNeg, "unit_norm": UnitNorm,
            "min_max_norm": MinMaxNorm}


def get(identifier):
    if identifier is None or callable(identifier):
        return identifier
    if isinstance(identifier, str) and identifier in _BY_NAME:
        return _BY_NAME[identifier]()
    if isinstance(identifier, dict):
        return {c.__name__: c for c in _BY_NAME.values()}[identifier["class_name"]](
            **identifier["config"])
    raise ValueError(f"Unknown constraint {identifier!r}: expected one of "
                     f"{', '.join(_BY_NAME)} or a callable")


def serialize(constraint):
    if constraint is None:
        return None
    return {"class_name": type(constraint).__name__, "config": constraint.get_config()}
