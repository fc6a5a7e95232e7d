"""Which layers a layer owns: those assigned to its attributes, also inside lists, tuples and
dicts (``self.blocks = [Dense(8), Dense(8)]``, ``self.heads = {"a": Dense(1)}``), as Keras
tracks them, so their weights are the owner's weights.

A list or dict assigned to a public attribute is kept as a ``TrackedList``/``TrackedDict`` (a
``list``/``dict`` subclass) so that layers appended later (``self.blocks.append(Dense(8))``)
are owned too.
"""
from __future__ import annotations

from typing import Any, Callable


def layers_in(value: Any, is_layer: Callable[[Any], bool]) -> list:
    """The layers in ``value``: itself, or the leaves of nested lists, tuples and dicts."""
    if is_layer(value):
        return [value]
    if isinstance(value, (list, tuple)):
        return [layer for item in value for layer in layers_in(item, is_layer)]
    if isinstance(value, dict):
        return [layer for item in value.values() for layer in layers_in(item, is_layer)]
    return []


def tracked(value: Any, adopt: Callable[[Any], None]) -> Any:
    """``value`` with its lists and dicts replaced by tracking ones that call ``adopt`` on
    every item added later (items already there are adopted by the caller)."""
    if type(value) is list:
        return TrackedList((tracked(item, adopt) for item in value), adopt)
    if type(value) is dict:
        return TrackedDict({key: tracked(item, adopt) for key, item in value.items()}, adopt)
    return value


class TrackedList(list):
    def __init__(self, items=(), adopt=None):
        super().__init__(items)
        self._adopt = adopt

    def _added(self, item):
        item = tracked(item, self._adopt)
        self._adopt(item)
        return item

    def append(self, item):
        super().append(self._added(item))

    def insert(self, index, item):
        super().insert(index, self._added(item))

    def extend(self, items):
        super().extend(self._added(item) for item in items)

    def __iadd__(self, items):  # type: ignore[misc]  # list's own skips extend()
        self.extend(items)
        return self

    def __setitem__(self, index, item):
        if isinstance(index, slice):
            super().__setitem__(index, [self._added(i) for i in item])
        else:
            super().__setitem__(index, self._added(item))


class TrackedDict(dict):
    def __init__(self, items=(), adopt=None):
        super().__init__(items)
        self._adopt = adopt

    def __setitem__(self, key, item):
        item = tracked(item, self._adopt)
        self._adopt(item)
        super().__setitem__(key, item)

    def update(self, *args, **kwargs):
        for key, item in dict(*args, **kwargs).items():
            self[key] = item

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return self[key]
