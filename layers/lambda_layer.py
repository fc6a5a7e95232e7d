"""``Lambda``: wrap an expression of ops as a layer, as ``keras.layers.Lambda``.

    double = layers.Lambda(lambda x: x * 2.0)
    norm = layers.Lambda(lambda x, scale: scale * x / ops.sum(x, -1, keepdims=True),
                         arguments={"scale": 3.0})

Saving stores a module-level function by module and name. A lambda or nested function is
stored as Python bytecode (as Keras does); loading it runs code from the file, so
``load_model`` refuses until ``hiapi.config.enable_unsafe_deserialization()`` is called, and the
bytecode only loads on the Python version that wrote it. Prefer a subclassed Layer for anything
you need to keep.
"""
from __future__ import annotations

import base64
import importlib
import inspect
import marshal
import sys
import types
from typing import Any, Callable

import numpy as np

from hiapi.hints import ShapeLike, Tensor
from hiapi.layers.layer import Layer


class Lambda(Layer):
    def __init__(self, function: Callable[..., Any],
                 output_shape: ShapeLike | Callable[..., Any] | None = None,
                 mask: Callable[..., Any] | Tensor | None = None,
                 arguments: dict[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not callable(function):
            raise TypeError(f"Lambda {self.name!r}: function must be callable, got "
                            f"{type(function).__name__}")
        if arguments is not None and not isinstance(arguments, dict):
            raise TypeError(f"Lambda {self.name!r}: arguments must be a dict of keyword "
                            f"arguments for the function, got {type(arguments).__name__}")
        self.function = function
        self.arguments = dict(arguments or {})
        self.mask = mask
        self.supports_masking = mask is not None
        self.lambda_output_shape = output_shape
        parameters = _parameters(function)
        self._passes = {name for name in ("mask", "training") if name in parameters}

    def call(self, inputs, mask=None, training=None):
        kwargs = dict(self.arguments)
        if "mask" in self._passes:
            kwargs["mask"] = mask
        if "training" in self._passes:
            kwargs["training"] = training
        return self.function(inputs, **kwargs)

    def compute_mask(self, inputs, previous_mask=None):
        if callable(self.mask):
            return self.mask(inputs, previous_mask)
        return self.mask

    def compute_output_shape(self, input_shape):
        """``output_shape`` when given (a shape, or a function of the input shape), else the
        shape found by tracing the function."""
        shape = self.lambda_output_shape
        if callable(shape):
            return shape(input_shape)
        if shape is not None:
            return (input_shape[0],) + tuple(shape) if not isinstance(input_shape, list) \
                else tuple(shape)
        return super().compute_output_shape(input_shape)

    def get_config(self):
        if self.mask is not None and callable(self.mask):
            raise ValueError(f"Lambda {self.name!r}: a callable mask cannot be saved")
        config = {**super().get_config(), "function": _dump(self.name, self.function),
                  "arguments": _json_arguments(self.name, self.arguments)}
        if self.lambda_output_shape is not None:
            if callable(self.lambda_output_shape):
                raise ValueError(f"Lambda {self.name!r}: a callable output_shape cannot be "
                                 f"saved; give the shape as a tuple")
            config["output_shape"] = list(self.lambda_output_shape)
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        config["function"] = _load(config.get("name"), config["function"], custom_objects)
        return cls(**config)


def _parameters(function):
    try:
        return inspect.signature(function).parameters
    except (TypeError, ValueError):      # some builtins have no signature
        return {}


def _json_arguments(name, arguments):
    for key, value in arguments.items():
        if not isinstance(value, (bool, int, float, str, list, type(None))):
            raise ValueError(f"Lambda {name!r}: argument {key!r} is a {type(value).__name__}, "
                             f"which cannot be saved (numbers, strings and lists can)")
    return arguments


def _dump(name, function):
    qualname = getattr(function, "__qualname__", "")
    module = getattr(function, "__module__", None)
    if module and "<" not in qualname and _resolve(module, qualname) is function:
        return {"module": module, "name": qualname}
    if not isinstance(function, types.FunctionType):
        raise ValueError(f"Lambda {name!r}: cannot save {function!r}; use a module-level "
                         f"function or a lambda")
    closure = [cell.cell_contents for cell in function.__closure__ or ()]
    for value in list(function.__defaults__ or ()) + closure:
        if not isinstance(value, (bool, int, float, str, type(None))):
            raise ValueError(f"Lambda {name!r}: the function captures or defaults to a "
                             f"{type(value).__name__}, which cannot be saved; pass it through "
                             f"arguments=, or use a module-level function")
    return {"bytecode": base64.b64encode(marshal.dumps(function.__code__)).decode("ascii"),
            "python": list(sys.version_info[:2]), "defaults": function.__defaults__,
            "closure": closure}


def _resolve(module, qualname):
    target = sys.modules.get(module)
    for part in qualname.split("."):
        target = getattr(target, part, None)
    return target


def _load(name, spec, custom_objects):
    if "module" in spec:
        if custom_objects and spec["name"] in custom_objects:
            return custom_objects[spec["name"]]
        importlib.import_module(spec["module"])      # a no-op when already imported
        function = _resolve(spec["module"], spec["name"])
        if function is None:
            raise ValueError(f"Lambda {name!r}: function {spec['module']}.{spec['name']} no "
                             f"longer exists; pass it in custom_objects={{{spec['name']!r}: "
                             f"fn}}")
        return function
    from hiapi.runtime.settings import unsafe_deserialization_enabled
    if not unsafe_deserialization_enabled():
        raise ValueError(f"Lambda {name!r} was saved as Python bytecode, and loading it would "
                         f"run code from the file. If you trust the file, call "
                         f"hiapi.config.enable_unsafe_deserialization() first")
    if tuple(spec["python"]) != tuple(sys.version_info[:2]):
        raise ValueError(f"Lambda {name!r} was saved by Python {spec['python'][0]}."
                         f"{spec['python'][1]}; its bytecode does not load on Python "
                         f"{sys.version_info[0]}.{sys.version_info[1]}")
    from hiapi import ops
    # the saved function's globals name the whole library: the package is loaded (this layer is
    # in it) and is read here, not imported: it imports every floor above the layers
    namespace = {"hiapi": sys.modules["hiapi"], "ops": ops, "np": np, "numpy": np,
                 **(custom_objects or {})}
    code = marshal.loads(base64.b64decode(spec["bytecode"]))
    closure = tuple(types.CellType(v) for v in spec["closure"]) or None
    defaults = tuple(spec["defaults"]) if spec["defaults"] else None
    return types.FunctionType(code, namespace, code.co_name, defaults, closure)
