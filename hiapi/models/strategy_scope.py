"""The strategy in effect: ``with strategy.scope():`` around ``compile`` attaches it to the
model. The trainer asks here; ``hiapi.distribute``, the floor above, enters its strategies here
(so the trainer imports neither MPI nor the strategies)."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any

_stack: list[Any] = []         # the Strategy objects entered, innermost last


def current_strategy():
    return _stack[-1] if _stack else None


@contextmanager
def strategy_scope(strategy):
    _stack.append(strategy)
    try:
        yield strategy
    finally:
        _stack.pop()
