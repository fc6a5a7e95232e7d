"""``SeededLayer``: the seed and step counter behind hiapi's random layers (``Dropout``, the
noise layers, the image augmentations). Their random numbers come from counter-based ops fed
the layer's seed (drawn from the global seed unless given) and a counter the training graph
increments, so they are reproducible under ``hiapi.utils.set_random_seed`` and fresh at every
step."""
from __future__ import annotations

from typing import Any

from hiapi.runtime import random_streams as _random
from hiapi.layers.layer import Layer


class SeededLayer(Layer):
    def __init__(self, seed: int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.seed = int(_random.generator().integers(2**62)) if seed is None else int(seed)

    def build(self, input_shape):
        self.counter = self.add_state((), "zeros", "seed_counter", "int64")
        self.built = True
