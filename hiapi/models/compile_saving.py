"""Keras 3's compile hooks for saving: ``get_compile_config()`` gives what ``compile`` was
called with, as the ``compile_config`` of a ``.keras`` file; ``compile_from_config(config)``
compiles a loaded model with it (before its weights are loaded, as in Keras). A model whose
``compile`` takes other arguments overrides both, deserializing what it saved::

    def compile_from_config(self, config):
        self.compile(loss_fn=hiapi.saving.deserialize_keras_object(config["loss_fn"]))

The work is ``hiapi.saving``'s (``keras_archive/compile_config.py``), reached through
``saving_functions`` as ``Model.save`` reaches it."""
from __future__ import annotations

import warnings
from typing import Any

from hiapi.serialization import saving_functions


class CompileSaving:
    compiled: bool
    name: str
    _builtin_compile: Any        # Trainer.compile, to tell an overridden compile

    def get_compile_config(self) -> dict[str, Any] | None:
        """The ``compile_config`` Keras writes (optimizer, loss, metrics...), or None before
        ``compile``."""
        if not self.compiled:
            return None
        return saving_functions.get("compile_config")(self)

    def compile_from_config(self, config: dict[str, Any]) -> None:
        """``compile`` with a ``get_compile_config()`` dict. As in Keras, a model that
        overrides ``compile`` but not this method is left uncompiled, with a warning."""
        if type(self).compile is not type(self)._builtin_compile:  # type: ignore[attr-defined]
            warnings.warn(f"Model {self.name!r}: compile() was not called when loading it "
                          f"because its compile() method is custom; override "
                          f"compile_from_config() to compile it from the saved config, or "
                          f"compile it yourself", stacklevel=2)
            return
        saving_functions.get("compile_from_config")(self, config)
