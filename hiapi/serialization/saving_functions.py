"""The saving floor's functions, as the floors below it call them.

``Model.save``, ``hiapi.models.load_model``, the checkpoint callbacks, a wrapper layer's
config and ``hiapi.layers.serialize`` all need ``hiapi.saving``; but ``hiapi.saving`` builds
models and layers from files, so it imports them, and importing it from them would be an import
circle. So ``hiapi.saving`` hands its functions to this table when it loads (``provide``), and
they call them from here (``get``), as Keras's object registry lets models and saving find each
other without either importing the other. ``import hiapi`` always loads ``hiapi.saving``.
"""
from typing import Any, Callable

_functions: dict[str, Callable[..., Any]] = {}


def provide(**functions: Callable[..., Any]) -> None:
    """Called by ``hiapi.saving`` as it loads: ``save_model=..., load_model=...``."""
    _functions.update(functions)


def get(name: str) -> Callable[..., Any]:
    try:
        return _functions[name]
    except KeyError:
        raise RuntimeError(f"{name} is provided by hiapi.saving, which has not been imported "
                           f"(import hiapi loads it)") from None
