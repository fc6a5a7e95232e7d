"""The seed of a model's batch order, drawn from hiapi's host streams
(``hiapi.runtime.random_streams``) and then kept by the model."""
from hiapi.runtime.random_streams import shuffle_seed


def model_shuffle_seed(model):
    """The seed of ``model``'s batch order. It is taken from the global seed at the model's
    first ``fit`` and then belongs to the model: ``model.save`` stores it and ``load_model``
    restores it, so a resumed run shuffles as the uninterrupted one whatever seed (if any) the
    new process sets."""
    seed = getattr(model, "_shuffle_seed", None)
    if seed is None:
        seed = model._shuffle_seed = shuffle_seed()
    return seed

