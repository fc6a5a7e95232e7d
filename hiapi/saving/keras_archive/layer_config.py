"""One layer's config between hiapi and Keras 3's ``config.json``.

hiapi's ``get_config()`` already uses Keras's argument names; what differs is how values are
written (Keras writes initializers, regularizers, constraints and the dtype policy as
``{"module", "class_name", "config", "registered_name"}`` objects) and which arguments each side
has. ``keras_arguments.py`` (generated from Keras) lists Keras's arguments with their defaults,
so an argument only one side knows is dropped while it holds the default (it changes nothing)
and refused with its name and value otherwise, never silently lost.
"""
import inspect

from hiapi import initializers as hiapi_initializers
from hiapi.serialization.objects import deserialize_function
from hiapi.serialization.object_registration import (get_registered_name, is_registered,
                                              scoped_custom_objects)
from hiapi.saving.keras_archive.keras_arguments import LAYERS
from hiapi.utils.naming import snake_case

HIAPI_SUGGESTION = "save it to a '.hiapi' file instead (hiapi's native format keeps everything)"
OBJECT_MODULES = {"_initializer": "keras.initializers", "_regularizer": "keras.regularizers",
                  "_constraint": "keras.constraints"}
_NO_ARGUMENTS = {"Zeros", "Ones", "Identity"}
# Wrappers: config key -> the attribute holding that sublayer (its config is a Keras object,
# its weights sit under the attribute's name, e.g. bidirectional/forward_layer/cell/vars).
WRAPPED = {"Bidirectional": {"layer": "forward_layer", "backward_layer": "backward_layer"},
           "TimeDistributed": {"layer": "layer"}, "RNN": {"cell": "cell"}}
# Layers holding a list of sublayers: config key -> the attribute holding the list (a list of
# Keras objects in the config; each one's weights under the attribute's name and the one Keras
# gives it in a container, e.g. rnn/cell/cells/gru_cell/vars, then .../lstm_cell_1/vars).
WRAPPED_LISTS = {"StackedRNNCells": {"cells": "cells"}}
# Layers whose weights Keras keeps in sublayers it builds itself: (group, Keras's name for
# the sublayer) per chunk of the layer's weights, in order (kernel, and bias with use_bias).
SUBLAYER_WEIGHTS = {"MultiHeadAttention": [("query_dense", "query"), ("key_dense", "key"),
                                           ("value_dense", "value"),
                                           ("output_dense", "attention_output")]}
# Keras nests these in a layout hiapi does not translate yet: refused by name both ways.
NESTED: set[str] = set()


def function_object(fn):
    """A function as Keras serializes it: by its registered name (``"package>name"``), so it
    loads back when registered or passed in ``custom_objects``."""
    return {"module": fn.__module__, "class_name": "function",
            "config": get_registered_name(fn), "registered_name": "function"}


def keras_object(module, class_name, config):
    return {"module": module, "class_name": class_name, "config": config,
            "registered_name": None}


def is_keras_object(value):
    return isinstance(value, dict) and "class_name" in value and "config" in value


def dtype_policy(dtype):
    return keras_object("keras", "DTypePolicy", {"name": dtype})


def dtype_name(value):
    """A dtype from a config: a name, or Keras's DTypePolicy object."""
    return value["config"]["name"] if is_keras_object(value) else value


def _module_for(key):
    return next((module for suffix, module in OBJECT_MODULES.items() if key.endswith(suffix)),
                None)


def _camel(name):
    return "".join(part.capitalize() for part in name.split("_"))


def _to_keras_value(key, value, strict):
    if inspect.isfunction(value):          # a custom activation, say: Keras's function object
        if value.__name__ == "<lambda>" and not strict:
            return value                    # in memory it is kept; a file cannot hold it
        if value.__name__ == "<lambda>":
            raise ValueError(f"cannot write {key}={value!r} to a Keras .keras file: a lambda "
                             f"has no name to load it by; define it with def and register it "
                             f"with @hiapi.saving.register_keras_serializable")
        return function_object(value)
    if key == "seed" and isinstance(value, int):
        return value % 2**32        # Keras seeds are 32-bit; the random streams differ anyway
    module = _module_for(key)
    if module is None or value is None:
        return dtype_policy(value) if key == "dtype" else value
    if isinstance(value, str):
        class_name = _camel(value)
        config = {} if class_name in _NO_ARGUMENTS or module != "keras.initializers" \
            else {"seed": None}
        return keras_object(module, class_name, config)
    if is_keras_object(value):
        return keras_object(module, value["class_name"], value["config"])
    return value


def constructor_arguments(cls):
    """Keyword arguments ``cls`` accepts, with defaults (its MRO, as ``super().__init__``
    passes them on)."""
    found = {}
    for klass in reversed(cls.__mro__):
        init = klass.__dict__.get("__init__")
        if init is None or klass is object:
            continue
        for name, parameter in inspect.signature(init).parameters.items():
            if parameter.kind not in (parameter.VAR_KEYWORD, parameter.VAR_POSITIONAL) \
                    and name != "self":
                found[name] = parameter.default
    return found


def to_keras(layer, strict=True):
    """``{"module", "class_name", "config", "registered_name"}`` for a layer. ``strict`` (a
    ``.keras`` file) refuses what Keras cannot read with a ValueError naming it; otherwise (a
    config in memory) a hiapi-only layer or argument is kept. A class of your own is written
    as Keras writes one: its module, its registered name, its ``get_config()``."""
    cls = type(layer)
    if not cls.__module__.startswith("hiapi.") or is_registered(cls):
        # Keras keeps what a class of your own put in its config: "l1" stays a string
        config = {key: value if isinstance(value, str) and key != "dtype"
                  else _to_keras_value(key, value, strict)
                  for key, value in layer.get_config().items()}
        return {"module": cls.__module__, "class_name": cls.__name__, "config": config,
                "registered_name": get_registered_name(cls)}
    class_name = cls.__name__
    keras_arguments = LAYERS.get(class_name)
    if keras_arguments is None and strict:
        raise ValueError(f"cannot write layer {layer.name!r} ({class_name}) to a Keras .keras "
                         f"file: Keras has no such layer; {HIAPI_SUGGESTION}")
    if class_name in NESTED and strict:
        raise ValueError(f"cannot write layer {layer.name!r} ({class_name}) to a Keras .keras "
                         f"file: hiapi does not write Keras's nested layout for its sublayers "
                         f"yet; {HIAPI_SUGGESTION}")
    hiapi_defaults = constructor_arguments(cls)
    config = {}
    for key, value in layer.get_config().items():
        if key == "_call_options":          # attention's call options: Keras keeps them in
            continue                        # the inbound nodes, where model_config writes them
        if keras_arguments is not None and key not in keras_arguments:
            if value == hiapi_defaults.get(key, inspect.Parameter.empty):
                continue
            if strict:
                raise ValueError(f"cannot write layer {layer.name!r} ({class_name}) to a "
                                 f"Keras .keras file: Keras's {class_name} has no argument "
                                 f"{key!r} (it is {value!r} here); {HIAPI_SUGGESTION}")
        config[key] = _to_keras_value(key, value, strict)
    for key, attribute in WRAPPED.get(class_name, {}).items():
        config[key] = to_keras(getattr(layer, attribute), strict)
    for key, attribute in WRAPPED_LISTS.get(class_name, {}).items():
        config[key] = [to_keras(sublayer, strict) for sublayer in getattr(layer, attribute)]
    module = "keras.layers" if keras_arguments is not None else "hiapi.layers"
    return keras_object(module, class_name, config)


def _initializer_from_keras(value):
    config = {k: v for k, v in value["config"].items() if v is not None}
    name = snake_case(value["class_name"])
    if not config or config == {"gain": 1.0}:
        return name
    factory = getattr(hiapi_initializers, value["class_name"], None)
    try:
        return hiapi_initializers.serialize(factory(**config))
    except (TypeError, ValueError):
        raise ValueError(f"hiapi has no initializer {value['class_name']}({config})") from None


def _from_keras_value(key, value, own=False):
    """A config value as hiapi's layers take it; a class of your own (``own``) gets other
    Keras objects (a sublayer, a regularizer) as Keras passes them, for its ``from_config``."""
    if key == "dtype":
        return dtype_name(value)
    if not is_keras_object(value):
        return value
    if value["class_name"] == "function":
        return deserialize_function(value["config"])
    if key.endswith("_initializer"):
        return _initializer_from_keras(value)
    if own:
        return value
    return {"class_name": value["class_name"], "config": value["config"]}


def _sublayer_from_keras(entry, get_class, filepath):
    """A wrapped layer's Keras object as hiapi's ``{"class_name", "config"}`` (what the
    wrapper's ``from_config`` takes)."""
    layer = from_keras(entry, get_class, filepath)
    return {"class_name": type(layer).__name__, "config": layer.get_config()}


def from_keras(entry, get_class, filepath):
    """A layer from a Keras layer entry of ``config.json`` (or of ``get_config``). For
    hiapi's own layers, Keras-only arguments at their defaults are dropped and others
    refused by name; a class of your own gets its whole config."""
    class_name, config = entry["class_name"], entry["config"]
    name = config.get("name", class_name)
    if class_name in NESTED:
        raise ValueError(f"{filepath}: layer {name!r} is a {class_name}, whose sublayers Keras "
                         f"nests in a layout hiapi does not read yet")
    registered = entry.get("registered_name")
    cls = get_class(registered if registered and registered != class_name else class_name)
    own = not cls.__module__.startswith("hiapi.") or is_registered(cls)
    hiapi_arguments = constructor_arguments(cls)
    keras_defaults = LAYERS.get(class_name, {})
    arguments = {}
    for key, value in config.items():
        if key not in hiapi_arguments and not own:
            if key in keras_defaults and value == keras_defaults[key]:
                continue
            raise ValueError(f"{filepath}: layer {name!r} ({class_name}) has {key}={value!r}, "
                             f"which hiapi's {cls.__name__} does not support")
        try:
            if key in WRAPPED.get(class_name, {}) and value is not None:
                arguments[key] = _sublayer_from_keras(value, get_class, filepath)
            elif key in WRAPPED_LISTS.get(class_name, {}):
                arguments[key] = [_sublayer_from_keras(item, get_class, filepath)
                                  for item in value]
            else:
                arguments[key] = _from_keras_value(key, value, own)
        except ValueError as error:
            raise ValueError(f"{filepath}: layer {name!r} ({class_name}) argument {key!r}: "
                             f"{error}") from None
    if "custom_objects" in inspect.signature(cls.from_config).parameters:   # Lambda's
        return cls.from_config(arguments, custom_objects=scoped_custom_objects())
    return cls.from_config(arguments)
