"""``keras.utils``'s names for the serialization API, which Keras 3 exports from both
``keras.utils`` and ``keras.saving`` (guides use either): the registry of custom objects and
``serialize_keras_object`` / ``deserialize_keras_object``. The registry is the low floor's
(``hiapi.serialization``); the two functions are ``hiapi.saving``'s, reached through
``saving_functions`` since the saving floor sits above the modules that import ``hiapi.utils``::

    @hiapi.utils.register_keras_serializable(package="my_package")
    def scaled(x):
        return 2.0 * x
"""
from __future__ import annotations

from typing import Any, Mapping

from hiapi.serialization import saving_functions
from hiapi.serialization.object_registration import (  # noqa: F401  (re-exported)
    CustomObjectScope, custom_object_scope, get_custom_objects, get_registered_name,
    get_registered_object, register_keras_serializable)


def serialize_keras_object(obj: Any) -> Any:
    """``hiapi.saving.serialize_keras_object``."""
    return saving_functions.get("serialize_keras_object")(obj)


def deserialize_keras_object(config: Any, custom_objects: Mapping[str, Any] | None = None,
                             safe_mode: bool = True, **kwargs: Any) -> Any:
    """``hiapi.saving.deserialize_keras_object``."""
    return saving_functions.get("deserialize_keras_object")(config, custom_objects,
                                                            safe_mode, **kwargs)
