"""The library's one source of randomness on the host (weight initialisation, shuffling).

``hiapi.utils.set_random_seed(seed)`` reseeds it, which is what makes two runs with the same
seed produce identical weights and the same batch order. It sits on the runtime floor (no
import of hiapi) so any floor may draw from it; ``hiapi.random`` is the public face.
"""
import random as _py_random

import numpy as np

_generator = np.random.default_rng()
_shuffle_seed = int(np.random.SeedSequence().entropy % 2**63)
_seeded = False             # set_seed was called: the run is to be reproducible
_on_seeded = []


def generator():
    return _generator


def set_seed(seed):
    """Reseed hiapi's generator, Python's ``random`` and numpy's legacy global generator."""
    global _generator, _shuffle_seed, _seeded
    seed = int(seed)
    _generator = np.random.default_rng(seed)
    _shuffle_seed = seed
    _py_random.seed(seed)
    np.random.seed(seed % 2**32)
    _seeded = True
    for function in _on_seeded:
        function()


def seeded():
    """Whether ``set_seed`` (``hiapi.utils.set_random_seed``) was called in this process: the
    user asked for a run that repeats, bit for bit."""
    return _seeded


def when_seeded(function):
    """Call ``function()`` once a seed is set (now, if one was): how the GEMM bands, which
    keep a seeded run's bits when the thread count changes, learn that they are needed,
    from a floor above this one."""
    _on_seeded.append(function)
    if _seeded:
        function()


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
