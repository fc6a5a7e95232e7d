"""Optimizers with Keras's names and defaults; updates are ops in the train graph."""
from hiapi.optimizers.optimizer import Optimizer
from hiapi.optimizers.sgd import SGD

_BY_NAME = {"sgd": SGD}


def get(identifier):
    """An optimizer from an instance or a name (``"sgd"``), with default arguments."""
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, str) and identifier.lower() in _BY_NAME:
        return _BY_NAME[identifier.lower()]()
    raise ValueError(f"Unknown optimizer {identifier!r}: expected one of "
                     f"{', '.join(sorted(_BY_NAME))} or a hiapi.optimizers.Optimizer instance")
