"""Optimizers and learning-rate schedules as Keras 3 writes them, ``{"module":
"keras.optimizers", "class_name": "Adam", "config": {...}}`` (a schedule as a
``keras.optimizers.schedules`` object inside it), and back. Used for a ``.keras`` file's
``compile_config`` and by ``serialize_keras_object`` / ``deserialize_keras_object``.
"""
from hiapi import optimizers as optimizers_module
from hiapi.optimizers import schedules as schedules_module
from hiapi.saving.keras_archive.keras_arguments import OPTIMIZERS
from hiapi.saving.keras_archive.layer_config import (HIAPI_SUGGESTION, constructor_arguments,
                                                     keras_object)

OPTIMIZERS_MODULE, SCHEDULES_MODULE = "keras.optimizers", "keras.optimizers.schedules"


def optimizer_to_keras(optimizer):
    if isinstance(optimizer, optimizers_module.LossScaleOptimizer):
        return _loss_scale_to_keras(optimizer)
    saved = optimizers_module.serialize(optimizer)
    class_name, keras_arguments = saved["class_name"], OPTIMIZERS.get(saved["class_name"])
    if keras_arguments is None:
        raise ValueError(f"cannot write the optimizer {class_name} to a Keras .keras file: "
                         f"Keras has no such optimizer; save with include_optimizer=False, "
                         f"or {HIAPI_SUGGESTION}")
    config = {}
    for key, value in saved["config"].items():
        if key not in keras_arguments:
            raise ValueError(f"cannot write the optimizer {class_name} to a Keras .keras "
                             f"file: Keras's {class_name} has no argument {key!r}; "
                             f"{HIAPI_SUGGESTION}")
        if key == "learning_rate" and isinstance(value, dict):
            value = _schedule_to_keras(value)
        config[key] = value
    return keras_object(OPTIMIZERS_MODULE, class_name, config)


def _loss_scale_to_keras(optimizer):
    """Keras's ``LossScaleOptimizer`` config: its inner optimizer nested as a Keras object."""
    return keras_object(OPTIMIZERS_MODULE, "LossScaleOptimizer", {
        "name": optimizer.name, "inner_optimizer": optimizer_to_keras(optimizer.inner_optimizer),
        "initial_scale": optimizer.initial_scale,
        "dynamic_growth_steps": optimizer.dynamic_growth_steps})


def _loss_scale_from_keras(config):
    """hiapi's ``LossScaleOptimizer`` from Keras's config (the base optimizer's arguments
    Keras adds must hold their defaults: a loss scaler has no rate or clipping of its own)."""
    own = {"name", "inner_optimizer", "initial_scale", "dynamic_growth_steps", "learning_rate"}
    # the base arguments every Keras optimizer takes (clipnorm, use_ema, ...), with defaults
    base = set.intersection(*(set(table) for table in OPTIMIZERS.values()))
    for key, value in config.items():
        if key not in own and (key not in base or value != OPTIMIZERS["SGD"][key]):
            raise ValueError(f"optimizer LossScaleOptimizer has {key}={value!r}, which hiapi's "
                             f"LossScaleOptimizer does not support; load with compile=False")
    return optimizers_module.LossScaleOptimizer(
        optimizer_from_keras(config["inner_optimizer"]),
        initial_scale=config.get("initial_scale", 2.0 ** 15),
        dynamic_growth_steps=config.get("dynamic_growth_steps", 2000), name=config.get("name"))


def schedule_to_keras(schedule):
    return _schedule_to_keras({**schedule.get_config(), "class_name": type(schedule).__name__})


def _schedule_to_keras(config):
    """hiapi writes a schedule as its config plus ``class_name``; Keras as an object (nested
    schedules, as in warm-up wrappers, too)."""
    inner = {key: _schedule_to_keras(value) if isinstance(value, dict) else value
             for key, value in config.items() if key != "class_name"}
    return keras_object(SCHEDULES_MODULE, config["class_name"], inner)


def _schedule_from_keras(value):
    inner = {key: _schedule_from_keras(item) if isinstance(item, dict) and "config" in item
             else item for key, item in value["config"].items()}
    return {**inner, "class_name": value["class_name"]}


def schedule_from_keras(entry):
    return schedules_module.deserialize(_schedule_from_keras(entry))


def plain(value):
    """A Keras object as hiapi's ``{"class_name", "config"}``, nested ones too; a function
    object as its (registered) name."""
    if isinstance(value, list):
        return [plain(item) for item in value]
    if isinstance(value, dict) and "class_name" in value and "config" in value:
        if value["class_name"] == "function":
            return value["config"] if isinstance(value["config"], str) else \
                value.get("registered_name")
        config = value["config"]
        return {"class_name": value["class_name"],
                "config": {k: plain(v) for k, v in config.items()}
                if isinstance(config, dict) else config}
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    return value


def optimizer_from_keras(entry):
    class_name = entry["class_name"]
    if class_name == "LossScaleOptimizer":
        return _loss_scale_from_keras(entry["config"])
    defaults = OPTIMIZERS.get(class_name)
    if defaults is None:
        raise ValueError(f"hiapi has no optimizer {class_name!r}; load with compile=False "
                         f"and compile the model yourself")
    known = constructor_arguments(getattr(optimizers_module, class_name))
    config = {}
    for key, value in entry["config"].items():
        value = _schedule_from_keras(value) if key == "learning_rate" and \
            isinstance(value, dict) else plain(value)
        if key not in known:
            if key in defaults and value == defaults[key]:
                continue
            raise ValueError(f"optimizer {class_name} has {key}={value!r}, which hiapi's "
                             f"{class_name} does not support; load with compile=False")
        config[key] = value
    return optimizers_module.deserialize({"class_name": class_name, "config": config})
