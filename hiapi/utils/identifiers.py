"""Resolving what ``compile(loss=..., metrics=[...])`` was given, shared by ``losses.get`` and
``metrics.get`` so the two accept the same kinds of identifier in the same order (as Keras's
``get`` functions do): an instance, a name, a class name, a saved config, a class, a function.
"""
from hiapi.serialization.object_registration import get_registered_object

# Names Keras gives both a loss and a metric: each means the class of the same class name in
# hiapi.losses and in hiapi.metrics, so the two tables cannot drift apart.
SHARED_NAMES = {
    "mean_squared_error": "MeanSquaredError", "mse": "MeanSquaredError",
    "MSE": "MeanSquaredError",
    "mean_absolute_error": "MeanAbsoluteError", "mae": "MeanAbsoluteError",
    "MAE": "MeanAbsoluteError",
    "mean_absolute_percentage_error": "MeanAbsolutePercentageError",
    "mape": "MeanAbsolutePercentageError", "MAPE": "MeanAbsolutePercentageError",
    "mean_squared_logarithmic_error": "MeanSquaredLogarithmicError",
    "msle": "MeanSquaredLogarithmicError", "MSLE": "MeanSquaredLogarithmicError",
    "binary_crossentropy": "BinaryCrossentropy",
    "categorical_crossentropy": "CategoricalCrossentropy",
    "sparse_categorical_crossentropy": "SparseCategoricalCrossentropy",
    "kl_divergence": "KLDivergence", "kld": "KLDivergence",
    "hinge": "Hinge", "squared_hinge": "SquaredHinge", "categorical_hinge": "CategoricalHinge",
    "poisson": "Poisson", "cosine_similarity": "CosineSimilarity",
}


def shared_names(classes):
    """``SHARED_NAMES`` looked up in ``classes`` (class name -> class)."""
    return {name: classes[class_name] for name, class_name in SHARED_NAMES.items()}


def resolve(identifier, base, by_name, classes, deserialize, wrap, keep_name=False):
    """The ``base`` object that ``identifier`` names, or None when it names none (so the caller
    raises an error saying what its kind accepts).

    An instance of ``base`` is returned as is; a name in ``by_name`` (called with
    ``name=identifier`` when ``keep_name``, so ``"mae"`` logs as ``mae``) or in ``classes`` is
    made with its defaults; a dict is a saved config for ``deserialize``; a subclass of
    ``base`` is made with its defaults; any other callable is wrapped by ``wrap``; another
    name is looked up among the custom objects (registered ones, or a scope's).
    """
    if isinstance(identifier, base):
        return identifier
    if isinstance(identifier, str) and identifier in by_name:
        return by_name[identifier](name=identifier) if keep_name else by_name[identifier]()
    if isinstance(identifier, str) and identifier in classes:
        return classes[identifier]()
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, type) and issubclass(identifier, base):
        return identifier()
    if callable(identifier):
        return wrap(identifier)
    found = get_registered_object(identifier) if isinstance(identifier, str) else None
    if found is not None and not isinstance(found, str):      # "package>name", as Keras
        return resolve(found, base, by_name, classes, deserialize, wrap, keep_name)
    return None
