"""The library's one source of randomness on the host (weight initialisation, shuffling).

``hiapi.utils.set_random_seed(seed)`` reseeds it, which is what makes two runs with the same
seed produce identical weights and the same batch order. The streams themselves live on the
runtime floor (``hiapi.runtime.random_streams``), where every floor may draw from them.
"""
from hiapi.runtime.random_streams import (  # noqa: F401  (the streams, on the runtime floor)
    epoch_generator, generator, make_generator, set_seed, shuffle_seed)


def model_shuffle_seed(model):
    """The seed of ``model``'s batch order. It is taken from the global seed at the model's
    first ``fit`` and then belongs to the model: ``model.save`` stores it and ``load_model``
    restores it, so a resumed run shuffles as the uninterrupted one whatever seed (if any) the
    new process sets."""
    seed = getattr(model, "_shuffle_seed", None)
    if seed is None:
        seed = model._shuffle_seed = shuffle_seed()
    return seed

