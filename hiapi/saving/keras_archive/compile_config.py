"""``compile_config`` and the optimizer's variables between hiapi and a ``.keras`` file.

Keras writes the optimizer as a Keras object, losses and metrics as names or objects. Its
optimizer variables are ``iterations``, the learning rate (a variable unless it is a schedule),
then the slots, variable by variable (Adam: momentum and velocity of the first weight, of the
second, ...): hiapi keeps the same slots in the same order, with the learning rate as a
number rather than a variable.
"""
import numpy as np

from hiapi import optimizers as optimizers_module
from hiapi.models import model_config
from hiapi.saving.keras_archive.layer_config import HIAPI_SUGGESTION, keras_object
from hiapi.saving.keras_archive.optimizer_config import (optimizer_from_keras,
                                                         optimizer_to_keras, plain)
from hiapi.serialization.objects import deserialize_object, serialize_object

_KERAS_MODULES = {"loss": "keras.losses", "metric": "keras.metrics"}
_KERAS_ONLY = {"run_eagerly": False, "steps_per_execution": 1, "jit_compile": False,
               "auto_scale_loss": True}


def compile_to_keras(model):
    """The ``compile_config`` of a compiled hiapi model (None when it was not compiled)."""
    if not getattr(model, "compiled", False):
        return None
    optimizer = model.optimizer
    if getattr(model, "_scaled_by_compile", False):     # Keras keeps compile's argument
        optimizer = optimizer.inner_optimizer
    return {"optimizer": optimizer_to_keras(optimizer),
            "loss": _to_keras(serialize_object(model._loss_ids)),
            "loss_weights": model._loss_weight_ids,
            "metrics": _to_keras(serialize_object(model._metric_ids or None)),
            "weighted_metrics": _to_keras(serialize_object(
                getattr(model, "_weighted_metric_ids", None) or None)),
            "run_eagerly": False, "steps_per_execution": 1, "jit_compile": False}


def _to_keras(value):
    """hiapi's saved losses/metrics in Keras's spelling: functions by name, objects with
    Keras's module."""
    if isinstance(value, list):
        return [_to_keras(item) for item in value]
    if isinstance(value, dict) and value.get("module") == "function":
        return value["config"]
    if isinstance(value, dict) and value.get("module") in _KERAS_MODULES:
        return keras_object(_KERAS_MODULES[value["module"]], value["class_name"],
                            value["config"])
    if isinstance(value, dict):
        return {key: _to_keras(item) for key, item in value.items()}
    return value


def optimizer_values(optimizer, model):
    """The optimizer's variables in Keras's order. An optimizer not built yet is written as
    freshly built (zero slots): Keras builds it when loading a compiled model and would
    otherwise skip the file's variables with a warning. A ``LossScaleOptimizer``'s are its
    own as Keras has them (an iteration count and a learning rate it never uses, then
    ``step_counter`` and ``dynamic_scale``) followed by its inner optimizer's."""
    if isinstance(optimizer, optimizers_module.LossScaleOptimizer):
        return loss_scale_header(optimizer) + optimizer_values(optimizer.inner_optimizer, model)
    if not optimizer.built:
        optimizer = optimizers_module.deserialize(optimizers_module.serialize(optimizer))
        optimizer.build(model.trainable_weights)
    values = [optimizer.iterations.numpy()]
    if optimizer.learning_rate_schedule is None:
        values.append(optimizer.learning_rate.numpy())
    return values + [v.numpy() for v in _slots_in_keras_order(optimizer, model)]


def _slots_in_keras_order(optimizer, model):
    """The slots ordered as Keras builds them: by the model's trainable weights in Keras's
    layer order (which can differ from hiapi's in a functional model), each weight's slots in
    creation order."""
    by_variable = {}
    for (variable_id, _), slot in optimizer._slots.items():
        by_variable.setdefault(variable_id, []).append(slot)
    ordered = [slot for variable in model_config.keras_trainable_weights(model)
               for slot in by_variable.get(id(variable), [])]
    if len(ordered) != len(optimizer._slots):
        raise ValueError(f"cannot write the optimizer state of {type(optimizer).__name__} to a "
                         f"Keras .keras file: it holds state for variables outside the model; "
                         f"save with include_optimizer=False, or {HIAPI_SUGGESTION}")
    return ordered


def compile_from_keras(model, config, custom_objects=None):
    """``model.compile`` with what a Keras ``compile_config`` holds (``Model``'s default
    ``compile_from_config``)."""
    for key, default in _KERAS_ONLY.items():
        if key in config and config[key] not in (default, None, "auto") and key != "jit_compile":
            raise ValueError(f"compile_config has {key}={config[key]!r}, which hiapi does not "
                             f"support; load with compile=False")
    optimizer = optimizer_from_keras(config["optimizer"]) \
        if config.get("optimizer") else "rmsprop"
    model.compile(optimizer=optimizer,
                  loss=deserialize_object(plain(config.get("loss")), custom_objects, "loss"),
                  loss_weights=config.get("loss_weights"),
                  metrics=deserialize_object(plain(config.get("metrics") or None),
                                             custom_objects, "metric"),
                  weighted_metrics=deserialize_object(
                      plain(config.get("weighted_metrics") or None), custom_objects, "metric"))
    return optimizer


def assign_optimizer(model, values, filepath, inner_values=()):
    """Keras's optimizer variables into the compiled model's optimizer (built first when the
    file holds slots); ``inner_values``: a loss scaler's inner optimizer's, when the file
    has them (``optimizer/inner_optimizer/vars``)."""
    optimizer = model.optimizer
    if isinstance(optimizer, optimizers_module.LossScaleOptimizer):
        if len(values) >= LOSS_SCALE_OWN:
            optimizer.step_counter.assign(np.asarray(values[2], np.int64))
            optimizer.dynamic_scale.assign(np.asarray(values[3], np.float32))
        _assign_plain(optimizer.inner_optimizer, model, values[LOSS_SCALE_OWN:], filepath)
    elif inner_values:      # a loss scaler's file into a model compiled without one (a
        # functional model's config has no dtype policy, so loading did not wrap): the
        # inner optimizer's state, the scale dropped (Keras warns and loads none)
        _assign_plain(optimizer, model, inner_values, filepath)
    else:
        _assign_plain(optimizer, model, values, filepath)


LOSS_SCALE_OWN = 4      # a loss scaler's own variables in Keras's list (``loss_scale_header``)


def loss_scale_header(optimizer):
    """A ``LossScaleOptimizer``'s own variables as Keras writes them: its unused iteration
    count and learning rate (0 and 0.0 in Keras), ``step_counter``, ``dynamic_scale``."""
    return [np.int64(0), np.float32(0.0), optimizer.step_counter.numpy(),
            optimizer.dynamic_scale.numpy()]


def _assign_plain(optimizer, model, values, filepath):
    """``assign_optimizer`` for an optimizer that is not a loss scaler."""
    header = 1 if optimizer.learning_rate_schedule is not None else 2
    if header == 2 and len(values) >= 2:
        optimizer.learning_rate = values[1]     # the rate when saved, as Keras restores it
    if len(values) <= header:
        if values:
            optimizer.iterations.assign(np.asarray(values[0], np.int64))
        return
    if not optimizer.built:
        optimizer.build(model.trainable_weights)
    slots = _slots_in_keras_order(optimizer, model)
    if len(values) - header != len(slots):
        raise ValueError(f"{filepath}: the optimizer state has {len(values) - header} slot "
                         f"variables, hiapi's {type(optimizer).__name__} has {len(slots)}; "
                         f"load with compile=False")
    optimizer.iterations.assign(np.asarray(values[0], np.int64))
    for variable, value in zip(slots, values[header:]):
        if tuple(value.shape) != tuple(variable.shape):
            raise ValueError(f"{filepath}: optimizer variable {variable.name!r} has shape "
                             f"{tuple(variable.shape)}, the file holds {tuple(value.shape)}")
        variable.assign(value)
