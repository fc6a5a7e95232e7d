"""Which object a saved name means: the registry every (de)serializer looks names up in.

It sits at the bottom of ``hiapi.saving`` and imports nothing of hiapi, as Keras's
``saving/object_registration.py`` does, so models and layers register themselves here and the
file formats look them up without importing either. Names resolve, first to last: the innermost
``custom_object_scope``, the global table (``get_custom_objects()``, filled by
``@register_keras_serializable``), the ``custom_objects`` a load call was given (Keras's
order), then hiapi's own classes; a scope or ``custom_objects`` may also name a registered
``"package>Name"`` by its ``Name`` alone::

    @hiapi.saving.register_keras_serializable(package="my_project")
    class Scale(hiapi.layers.Layer):
        ...

    with hiapi.saving.custom_object_scope({"Scale": Scale}):
        model = hiapi.models.load_model("m.keras")
"""
from __future__ import annotations

import inspect
import threading
from typing import Any, Callable, Mapping, TypeVar

_T = TypeVar("_T")
GLOBAL_CUSTOM_OBJECTS: dict[str, Any] = {}        # "package>Name" (or any key) -> object
GLOBAL_CUSTOM_NAMES: dict[Any, str] = {}          # registered object -> "package>Name"
_BUILTIN: dict[str, type] = {}                    # hiapi's own classes outside hiapi.layers
_scopes = threading.local()                       # per thread, as Keras's global state


class CustomObjectScope:
    """Within ``with custom_object_scope({"name": obj}):`` deserialization finds ``obj`` by
    ``name``, also for objects nested in configs (Keras's ``CustomObjectScope``)."""

    def __init__(self, custom_objects: Mapping[str, Any] | None) -> None:
        self.custom_objects = dict(custom_objects or {})
        self._previous: dict[str, Any] | None = None

    def __enter__(self) -> CustomObjectScope:
        self._previous = _current_scope()
        _scopes.objects = {**self._previous, **self.custom_objects}
        return self

    def __exit__(self, *exc_info: Any) -> None:
        _scopes.objects = self._previous


custom_object_scope = CustomObjectScope


def _current_scope() -> dict[str, Any]:
    return getattr(_scopes, "objects", None) or {}


def scoped_custom_objects() -> dict[str, Any]:
    """The objects the enclosing ``custom_object_scope``s give (for a ``from_config`` that
    takes ``custom_objects``, such as Lambda's)."""
    return dict(_current_scope())


def get_custom_objects() -> dict[str, Any]:
    """The global table of custom objects (mutable: ``get_custom_objects()["f"] = f``
    registers ``f`` under ``"f"``)."""
    return GLOBAL_CUSTOM_OBJECTS


def register_keras_serializable(package: str = "Custom",
                                name: str | None = None) -> Callable[[_T], _T]:
    """Decorator: register a class or function as ``"package>name"`` (name defaults to its
    ``__name__``), so saved configs that name it load back without ``custom_objects``. A
    class must have ``get_config``; registering the name again replaces the earlier object
    (as in Keras, so a notebook cell can be rerun)."""
    def decorate(obj):
        registered = f"{package}>{name or obj.__name__}"
        if inspect.isclass(obj) and not hasattr(obj, "get_config"):
            raise ValueError(f"register_keras_serializable: cannot register class "
                             f"{obj.__name__!r}: it has no get_config() method")
        GLOBAL_CUSTOM_OBJECTS[registered] = obj
        GLOBAL_CUSTOM_NAMES[obj] = registered
        return obj
    return decorate


def get_registered_name(obj: Any) -> str:
    """``"package>Name"`` for a registered class or function, else its ``__name__``."""
    return GLOBAL_CUSTOM_NAMES.get(obj, getattr(obj, "__name__", None) or type(obj).__name__)


def is_registered(obj: Any) -> bool:
    return obj in GLOBAL_CUSTOM_NAMES


def get_registered_object(name: str, custom_objects: Mapping[str, Any] | None = None,
                          module_objects: Mapping[str, Any] | None = None) -> Any:
    """The object ``name`` means (see the module docstring for the order), or None."""
    tables = (_current_scope(), GLOBAL_CUSTOM_OBJECTS, custom_objects or {},
              module_objects or {}, _BUILTIN)
    found = next((table[name] for table in tables if name in table), None)
    short = name.split(">")[-1]
    if found is None and short != name:
        found = next((table[short] for table in (tables[0], tables[2]) if short in table), None)
    return found


def register_builtin(name: str, cls: type) -> None:
    """hiapi's own classes that configs name but that live above the layers (models):
    they register here, so loaders find them without importing them."""
    _BUILTIN[name] = cls
