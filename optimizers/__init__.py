"""Optimizers with Keras's names and defaults; their updates are ops in the train graph."""
from __future__ import annotations

from typing import Any

from hiapi.optimizers import schedules
from hiapi.optimizers.optimizer import Optimizer
from hiapi.optimizers.sgd import SGD
from hiapi.optimizers.lars import LARS
from hiapi.optimizers.adam import Adam, AdamW
from hiapi.optimizers.rmsprop import RMSprop
from hiapi.optimizers.adagrad import Adagrad
from hiapi.optimizers.adadelta import Adadelta
from hiapi.optimizers.adamax import Adamax
from hiapi.optimizers.nadam import Nadam
from hiapi.optimizers.loss_scale_optimizer import LossScaleOptimizer

_BY_NAME = {"sgd": SGD, "lars": LARS, "adam": Adam, "adamw": AdamW, "rmsprop": RMSprop,
            "adagrad": Adagrad, "adadelta": Adadelta, "adamax": Adamax, "nadam": Nadam}


def get(identifier: str | Optimizer) -> Optimizer:
    """An optimizer from an instance or a name (``"adam"``), with default arguments."""
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, str) and identifier.lower() in _BY_NAME:
        return _BY_NAME[identifier.lower()]()
    raise ValueError(f"Unknown optimizer {identifier!r}: expected one of "
                     f"{', '.join(sorted(_BY_NAME))} or a hiapi.optimizers.Optimizer instance")


def serialize(optimizer: Optimizer) -> dict[str, Any]:
    return {"class_name": type(optimizer).__name__, "config": optimizer.get_config()}


def deserialize(config: dict[str, Any]) -> Optimizer:
    if config["class_name"] == "LossScaleOptimizer":
        kwargs = dict(config["config"])
        return LossScaleOptimizer(deserialize(kwargs.pop("inner_optimizer")), **kwargs)
    cls = {c.__name__: c for c in _BY_NAME.values()}[config["class_name"]]
    kwargs = dict(config["config"])
    lr = kwargs.get("learning_rate")
    if isinstance(lr, dict):
        kwargs["learning_rate"] = schedules.deserialize(lr)
    return cls(**kwargs)
