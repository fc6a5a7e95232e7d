"""Keras 3's object serialization: ``serialize_keras_object`` turns a layer, a model, an
initializer, a loss, a function... into the JSON-able dict Keras's ``config.json`` carries, and
``deserialize_keras_object`` turns such a dict back into the object::

    {"module": "keras.layers", "class_name": "Dense", "config": {...},
     "registered_name": None, "build_config": {"input_shape": [None, 8]}}

One format for everything: ``Model.get_config()``, ``clone_model``, ``to_json``,
``layers.serialize`` and the ``.keras`` writer all go through here. Written for a ``.keras``
file (``strict=True``), what Keras cannot read back (a hiapi-only layer or argument) is refused
with its name; in memory it is kept, so every hiapi model round-trips. Class names resolve
through ``object_registration`` (custom objects, then hiapi's own classes), so this module
imports no model: models register themselves there.
"""
from __future__ import annotations

import inspect
from typing import Any, Mapping

import numpy as np

from hiapi import constraints, initializers, optimizers, regularizers
from hiapi import layers as layers_module
from hiapi.layers.layer import Layer
from hiapi.serialization import objects
from hiapi.optimizers import schedules
from hiapi.saving.keras_archive import layer_config, optimizer_config
from hiapi.serialization.object_registration import (custom_object_scope, get_registered_name,
                                              get_registered_object, is_registered,
                                              scoped_custom_objects)

# Keras's modules for hiapi's own objects that are not layers (layers say theirs in to_keras)
_OBJECT_MODULES = {"keras.initializers": (initializers.Initializer, initializers),
                   "keras.regularizers": (regularizers.Regularizer, regularizers),
                   "keras.constraints": (constraints.Constraint, constraints)}


def serialize_keras_object(obj: Any, strict: bool = False) -> Any:
    """``obj`` as Keras 3 serializes it (see the module docstring); ``strict`` refuses what
    Keras could not read back."""
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return {"class_name": "__numpy__", "config": {"value": obj.tolist(),
                                                      "dtype": obj.dtype.name}}
    if isinstance(obj, (list, tuple)):
        return [serialize_keras_object(item, strict) for item in obj]
    if isinstance(obj, dict):
        return {key: serialize_keras_object(value, strict) for key, value in obj.items()}
    if isinstance(obj, Layer):
        return serialize_layer(obj, strict)
    if inspect.isfunction(obj) or inspect.isbuiltin(obj):
        return layer_config.function_object(obj)
    if isinstance(obj, (optimizers.Optimizer, schedules.LearningRateSchedule)) and \
            not is_registered(type(obj)):
        return _optimizer_object(obj, strict)
    if hasattr(obj, "get_config"):
        return _serialize_object(obj, strict)
    raise TypeError(f"serialize_keras_object: cannot serialize {obj!r} "
                    f"({type(obj).__name__}): it has no get_config()")


def _serialize_object(obj, strict):
    cls = type(obj)
    module = next((name for name, (base, _) in _OBJECT_MODULES.items()
                   if isinstance(obj, base)), cls.__module__)
    registered = is_registered(cls)
    return {"module": cls.__module__ if registered else module, "class_name": cls.__name__,
            "config": serialize_keras_object(obj.get_config(), strict),
            "registered_name": get_registered_name(cls) if registered else None}


def _optimizer_object(obj, strict):
    """An optimizer or schedule in Keras's form; one Keras lacks is refused in a file (with
    its name) and kept as hiapi's own object in memory."""
    try:
        return optimizer_config.optimizer_to_keras(obj) \
            if isinstance(obj, optimizers.Optimizer) else optimizer_config.schedule_to_keras(obj)
    except ValueError:
        if strict:
            raise
        return _serialize_object(obj, strict)


def _optimizer_from(module, class_name, body):
    """The optimizer or schedule of a ``keras.optimizers`` (or hiapi's own) entry."""
    entry = {"class_name": class_name, "config": body}
    if "schedules" in module:
        return optimizer_config.schedule_from_keras(entry) if module.startswith("keras") \
            else schedules.deserialize({**body, "class_name": class_name})
    return optimizer_config.optimizer_from_keras(entry) if module.startswith("keras") \
        else optimizers.deserialize(entry)


def serialize_layer(layer: Layer, strict: bool = False) -> dict[str, Any]:
    """One layer or model, with its ``build_config``. A Sequential or functional model
    writes its own Keras config (``keras_config``); a layer's ``get_config`` is translated
    by ``layer_config.to_keras``."""
    keras_config = getattr(layer, "keras_config", None)
    entry = keras_config(strict) if keras_config is not None else None
    if entry is None:
        entry = layer_config.to_keras(layer, strict)
        entry["config"] = {key: _nested_object(value, strict)
                           for key, value in entry["config"].items()}
        build_config = layer.get_build_config()
        if build_config is not None:
            entry["build_config"] = serialize_keras_object(build_config, strict)
    return entry


def _nested_object(value, strict):
    """A layer, regularizer, initializer... that a layer's ``get_config`` returns as it is
    (a custom layer holding a sublayer) serialized as Keras's ``serialize_dict`` does, so the
    config is JSON; the layer's ``from_config`` deserializes it, as Keras requires."""
    if isinstance(value, (list, tuple)):
        return [_nested_object(item, strict) for item in value]
    if isinstance(value, Layer) or (hasattr(value, "get_config") and not isinstance(value, type)):
        return serialize_keras_object(value, strict)
    return value


def deserialize_keras_object(config: Any, custom_objects: Mapping[str, Any] | None = None,
                             safe_mode: bool = True, **kwargs: Any) -> Any:
    """The object a ``serialize_keras_object`` dict (or a list or dict of them) describes;
    ``custom_objects`` maps names to classes and functions of your own, for this call and the
    objects nested in it; a plain string comes back as it is. ``safe_mode`` is Keras's
    argument; hiapi's rule is the same either way: a Lambda's bytecode loads only after
    ``hiapi.config.enable_unsafe_deserialization()``."""
    with custom_object_scope(custom_objects):
        return _deserialize(config)


def _deserialize(config):
    if isinstance(config, list):
        return [_deserialize(item) for item in config]
    if not isinstance(config, dict):
        return config
    if "class_name" not in config or "config" not in config:
        return {key: _deserialize(value) for key, value in config.items()}
    class_name, body = config["class_name"], config["config"]
    if class_name == "__numpy__":
        return np.array(body["value"], dtype=body["dtype"])
    if class_name == "__tuple__":
        return tuple(_deserialize(body["value"]))
    if class_name == "function":
        return objects.deserialize_function(body)
    module = config.get("module") or ""
    cls = find_class(class_name, config.get("registered_name"), module)
    kind = "loss" if "losses" in module else "metric" if "metrics" in module else None
    if cls is None and kind is not None:         # hiapi.serialization.objects knows losses, metrics
        return objects.deserialize_object({"class_name": class_name, "config": body}, kind=kind)
    if cls is None and module.startswith(("keras.optimizers", "hiapi.optimizers")):
        return _optimizer_from(module, class_name, body)
    if cls is None:
        cls = get_class(config.get("registered_name") or class_name, module)   # the error
    if isinstance(cls, type) and issubclass(cls, Layer):
        return deserialize_layer(cls, config)
    arguments = _deserialize(body) if isinstance(body, dict) else body
    return cls.from_config(arguments) if hasattr(cls, "from_config") else cls(**arguments)


def find_class(class_name, registered_name=None, module=None):
    """The class a config entry names, or None: a custom or registered object first, then
    hiapi's own models (registered by them), layers, initializers, regularizers, constraints."""
    for name in (registered_name, class_name):
        found = get_registered_object(name) if name else None
        if found is not None:
            return found
    if module and not module.startswith(("keras", "hiapi")):
        return None         # a class of the user's own module: found only as registered
    namespace = _OBJECT_MODULES.get(module or "", (None, layers_module))[1]
    found = getattr(namespace, class_name, None)
    return found if isinstance(found, type) else None


def get_class(name, module=None):
    """``find_class``, or a ValueError saying how to make ``name`` known."""
    found = find_class(name, module=module)
    if found is None:
        short = name.split(">")[-1]
        raise ValueError(f"Unknown class {name!r} in the saved model: register custom layers "
                         f"with @hiapi.saving.register_keras_serializable or pass "
                         f"custom_objects={{{short!r}: {short}}} to the loading function")
    return found


def deserialize_layer(cls, entry):
    """A layer of class ``cls`` from its entry; a layer outside a model is built from its
    ``build_config`` (``layer.build_from_config``), so its weights exist (to load them, as
    Keras does)."""
    config = entry["config"]
    if "custom_objects" in inspect.signature(cls.from_config).parameters and \
            getattr(cls, "keras_config", None) is not None and "layers" in config:
        layer = cls.from_config(config, custom_objects=scoped_custom_objects())
    else:
        own = {entry["class_name"], entry.get("registered_name")}     # already found: cls
        layer = layer_config.from_keras(
            entry, lambda name: cls if name in own else get_class(name), "config")
    build_config = entry.get("build_config")
    if build_config and not layer.built:
        layer.build_from_config(build_config)
    return layer
