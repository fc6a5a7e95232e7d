"""The library's one source of randomness on the host (weight initialisation, shuffling).

``hiapi.utils.set_random_seed(seed)`` reseeds it, which is what makes two runs with the same
seed produce identical weights and the same batch order. It sits on the runtime floor (no
import of hiapi) so any floor may draw from it; ``hiapi.random`` is the public face.
"""
import random as _py_random

import numpy as np

_generator = np.random.default_rng()
_shuffle_seed = int(np.random.SeedSequence().entropy % 2**63)


def generator():
    return _generator


def set_seed(seed):
    """Reseed hiapi's generator, Python's ``random`` and numpy's legacy global generator."""
    global _generator, _shuffle_seed
    seed = int(seed)
    _generator = np.random.default_rng(seed)
    _shuffle_seed = seed
    _py_random.seed(seed)
    np.random.seed(seed % 2**32)


def make_generator(seed=None):
    """A generator for one initializer: its own when ``seed`` is given, else the global one."""
    return np.random.default_rng(seed) if seed is not None else _generator


def epoch_generator(epoch, seed=None):
    """The generator that orders epoch ``epoch``'s batches. It depends only on the seed (the
    model's, see ``hiapi.random.model_shuffle_seed``; the global one when None) and the epoch
    number, so a run resumed from a checkpoint at epoch e shuffles exactly as the
    uninterrupted run did."""
    return np.random.default_rng([_shuffle_seed if seed is None else int(seed), int(epoch)])


def shuffle_seed():
    return _shuffle_seed
