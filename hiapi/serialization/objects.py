"""Saving what ``compile`` was given: losses and metrics as names, objects or functions, alone
or per output (lists, lists of lists, dicts), the way Keras serializes them.

An object is stored as ``{"module", "class_name", "config"}`` (its ``get_config()``) and made
again with ``from_config``; a function by its name. Classes and functions of your own load
when registered with ``@hiapi.saving.register_keras_serializable`` or passed to
``load_model(..., custom_objects={"name": obj})``, as in Keras.

``hiapi.losses`` and ``hiapi.metrics`` register their base class and namespaces here
(``register_kind``) when they load: they serialize through this module, so it cannot import
them without an import circle.
"""
from __future__ import annotations

import inspect

from types import ModuleType

from hiapi.serialization.object_registration import (custom_object_scope, get_registered_name,
                                                     get_registered_object)

# kind ("loss", "metric") -> (base class, module of its classes, module of its functions), in
# the order registered (losses first: hiapi.metrics imports hiapi.losses)
_kinds: dict[str, tuple[type, ModuleType, ModuleType]] = {}


def register_kind(kind: str, base: type, classes: ModuleType, functions: ModuleType) -> None:
    """Objects of ``base`` are saved as ``kind``; names load from ``classes`` and
    ``functions`` (called by ``hiapi.losses`` and ``hiapi.metrics`` as they load)."""
    _kinds[kind] = (base, classes, functions)


def _kind_of(obj):
    return next((kind for kind, (base, _, _) in _kinds.items() if isinstance(obj, base)), None)


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
        found = next((f for f in (getattr(functions, config, None) for _, _, functions in
                                  _kinds.values()) if callable(f)), None)
    if found is None:
        raise ValueError(f"Unknown function {config!r} in the saved model: register it with "
                         f"@hiapi.saving.register_keras_serializable() or pass "
                         f"custom_objects={{{config!r}: {config.split('>')[-1]}}} to load_model")
    return found


def _lookup(class_name, kind):
    found = get_registered_object(class_name)
    if found is not None:
        return found
    namespaces = [_kinds[kind][1]] if kind in _kinds else [classes for _, classes, _ in
                                                            _kinds.values()]
    found = next((c for c in (getattr(n, class_name, None) for n in namespaces)
                  if isinstance(c, type)), None)
    if found is not None:
        return found
    raise ValueError(f"Unknown {kind or 'object'} class {class_name!r} in the saved model: "
                     f"register it with @hiapi.saving.register_keras_serializable() or pass "
                     f"custom_objects={{{class_name.split('>')[-1]!r}: cls}} to load_model")
