"""``hiapi.layers.serialize`` / ``deserialize``: Keras's names for serializing one layer (or
model) to the dict ``config.json`` carries, and back. The work is
``hiapi.saving.serialization_lib``'s, as in Keras; these only give it the layers' names::

    config = hiapi.layers.serialize(hiapi.layers.Dense(4))
    dense = hiapi.layers.deserialize(config)        # a new Dense(4), unbuilt
"""
from __future__ import annotations

from typing import Any, Mapping


def serialize(layer: Any) -> dict[str, Any]:
    # hiapi.saving sits above the layers (it reads models too): imported at call time, as the
    # wrappers' nested configs do; issue #30 moves serialization_lib below the layers
    from hiapi.saving.serialization_lib import serialize_keras_object
    return serialize_keras_object(layer)


def deserialize(config: dict[str, Any], custom_objects: Mapping[str, Any] | None = None) -> Any:
    from hiapi.saving.serialization_lib import deserialize_keras_object
    return deserialize_keras_object(config, custom_objects)
