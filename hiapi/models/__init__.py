"""Models: the functional ``Model`` and ``Sequential``; ``clone_model``,
``model_from_json``, ``save_model`` and ``load_model``."""
from __future__ import annotations

import os
from typing import Any, Mapping

from hiapi.models.functional import Model
from hiapi.models.sequential import Sequential
from hiapi.models.cloning import clone_model, model_from_json
from hiapi.serialization import saving_functions


def load_model(filepath: str | os.PathLike[str], custom_objects: Mapping[str, Any] | None = None,
               compile: bool = True) -> Model:
    """``hiapi.saving.load_model`` (Keras's ``keras.models.load_model``), which this floor
    reaches through ``hiapi.serialization.saving_functions``: hiapi.saving imports the models."""
    return saving_functions.get("load_model")(filepath, custom_objects=custom_objects,
                                              compile=compile)


def save_model(model: Model, filepath: str | os.PathLike[str], **kwargs: Any) -> None:
    """``model.save(filepath)`` (Keras's ``keras.models.save_model``, which is equivalent);
    ``kwargs`` are ``hiapi.saving.save_model``'s (``include_optimizer``)."""
    saving_functions.get("save_model")(model, filepath, **kwargs)
