"""Keras 3's saving hooks on every layer, which the ``.keras`` and ``.weights.h5`` writers call
and a layer may override to save state its own way:

- ``get_build_config()`` / ``build_from_config(config)``: what ``build`` needs to make the
  layer's weights again when a file is loaded (by default the input shape);
- ``save_own_variables(store)`` / ``load_own_variables(store)``: the layer's weights into and
  out of ``store``, a dict of arrays (by default ``store["0"]``, ``store["1"]``, ... in
  ``layer.weights`` order, as Keras writes them).

A layer may also define ``save_assets(dir)`` / ``load_assets(dir)`` (no default, as in Keras):
files it writes into ``dir`` travel inside the ``.keras`` archive. When loading, Keras's order
is kept: ``build_from_config``, ``compile_from_config`` (models), ``load_own_variables``,
``load_assets``::

    class Scaled(hiapi.layers.Dense):
        def save_own_variables(self, store):
            super().save_own_variables(store)
            store["scale"] = self.scale.numpy()
"""
from __future__ import annotations

from typing import Any, MutableMapping

import numpy as np


def shape_list(shape: Any) -> Any:
    """A shape (or a list of shapes) as JSON lists."""
    if isinstance(shape, (list, tuple)) and shape and isinstance(shape[0], (list, tuple)):
        return [shape_list(s) for s in shape]
    return list(shape)


def is_flat_shape(shape: Any) -> bool:
    return isinstance(shape, (list, tuple)) and len(shape) > 0 and \
        all(d is None or isinstance(d, int) for d in shape)


class LayerSaving:
    """The hooks (see the module docstring); ``Layer`` inherits them."""
    name: str
    built: bool
    _build_input_shape: Any

    def get_build_config(self) -> dict[str, Any] | None:
        """``{"input_shape": ...}`` once the shape the layer was built for is known."""
        shape = getattr(self, "_build_input_shape", None)
        return None if shape is None else {"input_shape": shape_list(shape)}

    def build_from_config(self, config: dict[str, Any]) -> None:
        """Make the weights from ``get_build_config()``'s dict: ``build(input_shape)`` (or
        ``build(**shapes_dict)``, Keras's form for several inputs)."""
        shape: Any = (config or {}).get("input_shape")
        if is_flat_shape(shape):
            self.build(tuple(shape))  # type: ignore[attr-defined]  # Layer's
            self.built = True
        elif config and "shapes_dict" in config:
            self.build(**config["shapes_dict"])  # type: ignore[attr-defined]
            self.built = True

    def saved_variables(self) -> list:
        """What ``save_own_variables`` writes: ``layer.weights`` (a model, whose layers are
        saved each under its own path, keeps only its own)."""
        return list(self.weights)  # type: ignore[attr-defined]  # Layer's property

    def save_own_variables(self, store: MutableMapping[str, Any]) -> None:
        for index, variable in enumerate(self.saved_variables()):
            store[str(index)] = variable.numpy()

    def load_own_variables(self, store: MutableMapping[str, Any]) -> None:
        """Assign ``store["0"]``, ``store["1"]``, ... to ``saved_variables()``, or raise a
        ValueError naming the layer and what does not match."""
        variables = self.saved_variables()
        if len(store) != len(variables):
            raise ValueError(f"layer {self.name!r} ({type(self).__name__}) has "
                             f"{len(variables)} weights, the file holds {len(store)}")
        for index, variable in enumerate(variables):
            value = np.asarray(store[str(index)])
            if tuple(value.shape) != tuple(variable.shape):
                raise ValueError(f"layer {self.name!r} weight {variable.name!r} has shape "
                                 f"{tuple(variable.shape)}, the file holds shape "
                                 f"{tuple(value.shape)}")
            variable.assign(value)
