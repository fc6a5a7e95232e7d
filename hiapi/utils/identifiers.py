"""Resolving what ``compile(loss=..., metrics=[...])`` was given, shared by ``losses.get`` and
``metrics.get`` so the two accept the same kinds of identifier in the same order (as Keras's
``get`` functions do): an instance, a name, a class name, a saved config, a class, a function.
"""


def resolve(identifier, base, by_name, classes, deserialize, wrap, keep_name=False):
    """The ``base`` object that ``identifier`` names, or None when it names none (so the caller
    raises an error saying what its kind accepts).

    An instance of ``base`` is returned as is; a name in ``by_name`` (called with
    ``name=identifier`` when ``keep_name``, so ``"mae"`` logs as ``mae``) or in ``classes`` is
    made with its defaults; a dict is a saved config for ``deserialize``; a subclass of
    ``base`` is made with its defaults; any other callable is wrapped by ``wrap``.
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
    return None
