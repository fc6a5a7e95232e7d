"""``SeedGenerator``: the state behind random numbers that differ at every call (Keras 3's
``keras.random.SeedGenerator``).

hiapi's random numbers are counter-based (``hiapi.graph.ops.random``): a value is a hash of
(seed, counter, element index). A SeedGenerator holds ``state = [seed, counter]`` in a
non-trainable Variable, and every draw takes the counter and advances it. Inside a layer's
``call`` the counter is read from the graph and its increment is an update of the step, so a
compiled step draws fresh numbers each time it runs; on arrays the counter advances at once.
A layer that holds a SeedGenerator as an attribute saves its state with its weights, so a
resumed run draws what the uninterrupted one would have::

    class Noisy(hiapi.layers.Layer):
        def __init__(self):
            super().__init__()
            self.seed_generator = hiapi.random.SeedGenerator(1337)

        def call(self, x):
            return x + hiapi.random.normal(x.shape[1:], seed=self.seed_generator)
"""
from __future__ import annotations

import numpy as np

from hiapi.graph import tracing
from hiapi.graph.variable import Variable
from hiapi.runtime import random_streams as streams
from hiapi.utils.naming import unique_name


class SeedGenerator:
    def __init__(self, seed: int | None = None, name: str | None = None, **kwargs) -> None:
        if kwargs:
            raise ValueError(f"SeedGenerator: unrecognized keyword arguments {sorted(kwargs)}")
        self.name = name or unique_name("seed_generator")
        self._initial_seed = seed
        if seed is None:
            seed = int(streams.generator().integers(1, 2**62))
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise ValueError(f"SeedGenerator: seed must be an integer or None, got {seed!r} "
                             f"({type(seed).__name__})")
        self.state = Variable(np.array([int(seed) % 2**62, 0], np.int64),
                              name=f"{self.name}/seed_generator_state", trainable=False)

    def next(self, ordered: bool = True):
        """The state ``[seed, counter]`` for one draw (a graph value inside a trace, else an
        array), advancing the counter."""
        value = tracing.current_value(self.state) if tracing.in_trace() else \
            self.state.numpy()
        self.state.assign(value + np.array([0, 1], np.int64))
        return value

    def draw(self):
        """``(seed, counter)`` for a counter-based random op: the seed as a Python int (read
        from the state when the graph is built), the counter as a graph value inside a trace
        or an int on arrays."""
        seed = int(self.state.numpy()[0])
        value = self.next()
        return seed, value[1] if tracing.in_trace() else int(value[1])

    @property
    def state_variables(self):
        """What a layer holding this generator saves with its weights."""
        return [self.state]

    def get_config(self):
        return {"seed": self._initial_seed, "name": self.name}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f"<SeedGenerator {self.name!r} state={self.state.numpy().tolist()}>"


_global = [None, None]          # (generator, the hiapi stream it was seeded from)


def global_seed_generator() -> SeedGenerator:
    """The generator of draws with ``seed=None``; ``hiapi.utils.set_random_seed`` replaces
    hiapi's stream, and with it this generator, so unseeded draws repeat after it too."""
    if _global[0] is None or _global[1] is not streams.generator():
        _global[1] = streams.generator()
        _global[0] = SeedGenerator(name="global_seed_generator")
    return _global[0]


def is_global_state(variable) -> bool:
    """Whether ``variable`` is the state of the generator of unseeded draws: no model owns
    it (Keras's global SeedGenerator), so a model's ``call`` may read it untracked."""
    return _global[0] is not None and variable is _global[0].state


def resolve(seed, what):
    """``(seed, counter)`` for a draw from the ``seed`` argument of a random function: an int
    gives the same numbers at every call (counter 0), a SeedGenerator or None (the global
    one) fresh numbers."""
    if isinstance(seed, SeedGenerator):
        return seed.draw()
    if seed is None:
        return global_seed_generator().draw()
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        return int(seed) % 2**62, 0
    raise ValueError(f"{what}: seed must be an integer, a hiapi.random.SeedGenerator or None, "
                     f"got {seed!r} ({type(seed).__name__})")
