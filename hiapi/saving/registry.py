"""Which class a saved ``class_name`` means: hiapi's own layers and models, plus user classes
registered with ``@register_keras_serializable`` (Keras's name for the decorator)::

    @hiapi.saving.register_keras_serializable(package="my_project")
    class Scale(hiapi.layers.Layer):
        ...
"""
from __future__ import annotations

from typing import Callable, TypeVar

_custom: dict[str, type] = {}
_C = TypeVar("_C", bound=type)


def register_keras_serializable(package: str = "Custom",
                                name: str | None = None) -> Callable[[_C], _C]:
    """Class decorator: make a custom Layer or Model loadable by ``load_model``."""
    def decorate(cls):
        key = f"{package}>{name or cls.__name__}"
        if key in _custom and _custom[key] is not cls:
            raise ValueError(f"{key!r} is already registered to {_custom[key]!r}")
        _custom[key] = cls
        cls._registered_name = key
        return cls
    return decorate


def registered_name(cls):
    return cls.__dict__.get("_registered_name") or cls.__name__   # not inherited


def class_in(name, namespaces):
    """The first class called ``name`` in ``namespaces`` (modules), or None."""
    for namespace in namespaces:
        cls = getattr(namespace, name, None)
        if isinstance(cls, type):
            return cls
    return None


def get_class(name, custom_objects=None):
    if custom_objects and name in custom_objects:
        return custom_objects[name]
    if name in _custom:
        return _custom[name]
    import hiapi
    cls = class_in(name, (hiapi.layers, hiapi.models))
    if cls is not None:
        return cls
    raise ValueError(f"Unknown class {name!r} in the saved model: register custom layers with "
                     f"@hiapi.saving.register_keras_serializable or pass custom_objects="
                     f"{{{name!r}: cls}} to load_model")
