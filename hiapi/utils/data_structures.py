"""Keras's ``unpack_x_y_sample_weight`` / ``pack_x_y_sample_weight``: the ``data`` a custom
``train_step`` receives is what ``fit`` yields: ``(x, y)``, ``(x, y, sample_weight)``, or
``x`` alone (``(x,)`` when x is itself a list or tuple)."""
from __future__ import annotations

from typing import Any


def unpack_x_y_sample_weight(data: Any) -> tuple[Any, Any, Any]:
    """``(x, y, sample_weight)`` from ``data``, with None for what is absent.

    >>> unpack_x_y_sample_weight((1, 2))
    (1, 2, None)
    """
    if isinstance(data, list):
        data = tuple(data)
    if not isinstance(data, tuple):
        return data, None, None
    if len(data) == 1:
        return data[0], None, None
    if len(data) == 2:
        return data[0], data[1], None
    if len(data) == 3:
        return data[0], data[1], data[2]
    raise ValueError(f"unpack_x_y_sample_weight: data must be x, (x,), (x, y) or (x, y, "
                     f"sample_weight), got a tuple of {len(data)} elements")


def pack_x_y_sample_weight(x: Any, y: Any = None, sample_weight: Any = None) -> Any:
    """The inverse: ``x`` alone when there is no ``y`` (``(x,)`` if x is a list or tuple)."""
    if y is None:
        return (x,) if isinstance(x, (list, tuple)) else x
    if sample_weight is None:
        return (x, y)
    return (x, y, sample_weight)
