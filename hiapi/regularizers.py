"""Weight and activity regularizers with Keras's names: each maps a Var to a scalar loss term."""
from hiapi.graph import ops


class Regularizer:
    def __call__(self, x):
        raise NotImplementedError

    def get_config(self):
        return dict(vars(self))


class L1L2(Regularizer):
    """``l1 * sum(|x|) + l2 * sum(x^2)``."""

    def __init__(self, l1=0.0, l2=0.0):
        self.l1, self.l2 = float(l1), float(l2)

    def __call__(self, x):
        total = 0.0
        if self.l1:
            total = total + self.l1 * ops.sum(ops.abs(x))
        if self.l2:
            total = total + self.l2 * ops.sum(ops.square(x))
        return ops.constant(0.0, x.dtype) if isinstance(total, float) else total


class L1(L1L2):
    """``l1 * sum(|x|)`` (Keras's class: its config is ``{"l1": ...}``)."""

    def __init__(self, l1=0.01):
        super().__init__(l1=l1)

    def get_config(self):
        return {"l1": self.l1}


class L2(L1L2):
    """``l2 * sum(x^2)`` (Keras's class: its config is ``{"l2": ...}``)."""

    def __init__(self, l2=0.01):
        super().__init__(l2=l2)

    def get_config(self):
        return {"l2": self.l2}


# Keras 3's lowercase aliases: ``kernel_regularizer=regularizers.l2(1e-4)``; as in Keras,
# ``l1_l2()`` is the class (0 for both) while the string "l1_l2" means 0.01 for both
l1, l2, l1_l2 = L1, L2, L1L2


_BY_NAME = {"l1": L1, "l2": L2, "l1_l2": lambda: L1L2(0.01, 0.01)}


def get(identifier):
    if identifier is None or isinstance(identifier, Regularizer) or callable(identifier):
        return identifier
    if isinstance(identifier, str) and identifier in _BY_NAME:
        return _BY_NAME[identifier]()
    if isinstance(identifier, dict):
        cls = {"L1": L1, "L2": L2}.get(identifier.get("class_name"), L1L2)
        return cls(**identifier["config"])
    raise ValueError(f"Unknown regularizer {identifier!r}: expected one of "
                     f"{', '.join(_BY_NAME)} or a hiapi.regularizers.Regularizer")


def serialize(regularizer):
    if regularizer is None:
        return None
    return {"class_name": type(regularizer).__name__, "config": regularizer.get_config()}
