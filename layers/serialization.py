"""``hiapi.layers.serialize`` / ``deserialize``: Keras's names for serializing one layer (or
model) to the dict ``config.json`` carries, and back. The work is
``hiapi.saving.serialization_lib``'s, as in Keras; these only give it the layers' names, and
reach it through ``hiapi.serialization.saving_functions`` (the saving floor is above the
layers: it reads models too)::

    config = hiapi.layers.serialize(hiapi.layers.Dense(4))
    dense = hiapi.layers.deserialize(config)        # a new Dense(4), unbuilt
"""
from __future__ import annotations

from typing import Any, Mapping

from hiapi.serialization import saving_functions


def serialize(layer: Any) -> dict[str, Any]:
    return saving_functions.get("serialize_keras_object")(layer)


def deserialize(config: dict[str, Any], custom_objects: Mapping[str, Any] | None = None) -> Any:
    return saving_functions.get("deserialize_keras_object")(config, custom_objects)
