"""Unique default names for layers and models, as Keras gives them: dense, dense_1, dense_2."""
from __future__ import annotations

import re
from collections import defaultdict

_counts: defaultdict[str, int] = defaultdict(int)


def snake_case(class_name):
    """Keras's conversion: Conv2D -> conv2d, MaxPooling2D -> max_pooling2d."""
    name = re.sub(r"(.)([A-Z][a-z0-9]+)", r"\1_\2", class_name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()


def unique_name(base):
    count = _counts[base]
    _counts[base] += 1
    return base if count == 0 else f"{base}_{count}"


def clear_session() -> None:
    """Forget default-name counters (``keras.utils.clear_session``): the next Dense is 'dense'."""
    _counts.clear()
