"""Saving what ``compile`` was given: losses and metrics as names, objects or functions, alone
or per output (lists, lists of lists, dicts), the way Keras serializes them.

An object is stored as ``{"module", "class_name", "config"}`` (its ``get_config()``) and made
again with ``from_config``; a function by its name. Classes and functions of your own load
when registered with ``@hiapi.saving.register_keras_serializable`` or passed to
``load_model(..., custom_objects={"name": obj})``, as in Keras.
"""
from __future__ import annotations

import inspect

from hiapi.saving.object_registration import (custom_object_scope, get_registered_name,
                                              get_registered_object)


def _kind_of(obj):
    from hiapi.losses import Loss
    from hiapi.metrics import Metric
    return "loss" if isinstance(obj, Loss) else "metric" if isinstance(obj, Metric) else None


def serialize_object(obj):
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    if isinstance(obj, (list, tuple)):
        return [serialize_object(item) for item in obj]
    if isinstance(obj, dict):
        return {key: serialize_object(value) for key, value in obj.items()}
    kind = _kind_of(obj)
    if kind is not None:
        return {"module": kind, "class_name": get_registered_name(type(obj)),
                "config": serialize_object(obj.get_config())}
    if inspect.isfunction(obj) or inspect.isbuiltin(obj) or hasattr(obj, "__name__"):
        name = get_registered_name(obj)
        if name == "<lambda>":
            raise ValueError(f"cannot save {obj!r}: a lambda has no name to load it by; define "
                             f"it with def (and pass it to load_model's custom_objects)")
        return {"module": "function", "class_name": "function", "config": name}
    raise ValueError(f"cannot save {obj!r} ({type(obj).__name__}): losses and metrics are "
                     f"saved as names, functions, or hiapi.losses.Loss / hiapi.metrics.Metric "
                     f"objects with get_config()")


def _is_object(config):
    return isinstance(config, dict) and {"class_name", "config"} <= set(config) and \
        set(config) <= {"module", "class_name", "config"}


def deserialize_object(config, custom_objects=None, kind=None):
    """The inverse of ``serialize_object``; ``kind`` ("loss" or "metric") says where to look
    for a class name when the config does not."""
    with custom_object_scope(custom_objects):
        if config is None or isinstance(config, (str, int, float, bool)):
            return config
        if isinstance(config, list):
            return [deserialize_object(item, kind=kind) for item in config]
        if not _is_object(config):
            return {key: deserialize_object(value, kind=kind) for key, value in config.items()}
        if config["class_name"] == "function":
            return deserialize_function(config["config"])
        cls = _lookup(config["class_name"], config.get("module", kind))
        arguments = deserialize_object(config["config"], kind=kind) \
            if isinstance(config["config"], dict) else config["config"]
        return cls.from_config(arguments) if hasattr(cls, "from_config") else cls(**arguments)


def deserialize_function(config):
    if callable(config):           # already made by an enclosing deserialize_object
        return config
    if not isinstance(config, str):
        return deserialize_object(config)
    found = get_registered_object(config)
    if found is None:
        from hiapi import losses, metrics
        found = next((f for f in (getattr(namespace, config, None) for namespace in
                                  (losses.functions, metrics.functions)) if callable(f)), None)
    if found is None:
        raise ValueError(f"Unknown function {config!r} in the saved model: register it with "
                         f"@hiapi.saving.register_keras_serializable() or pass "
                         f"custom_objects={{{config!r}: {config.split('>')[-1]}}} to load_model")
    return found


def _lookup(class_name, kind):
    found = get_registered_object(class_name)
    if found is not None:
        return found
    from hiapi import losses, metrics
    namespaces = {"loss": (losses,), "metric": (metrics,)}.get(kind, (losses, metrics))
    found = next((c for c in (getattr(n, class_name, None) for n in namespaces)
                  if isinstance(c, type)), None)
    if found is not None:
        return found
    raise ValueError(f"Unknown {kind or 'object'} class {class_name!r} in the saved model: "
                     f"register it with @hiapi.saving.register_keras_serializable() or pass "
                     f"custom_objects={{{class_name.split('>')[-1]!r}: cls}} to load_model")
