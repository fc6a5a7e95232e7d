"""Keras's ``keras.tree``: nested structures of lists, tuples and dicts (``None`` is a leaf, a
dict's leaves come in sorted key order), for code such as a cell taking nested inputs::

    a, b = hiapi.tree.flatten(inputs)
    doubled = hiapi.tree.map_structure(lambda x: 2 * x, {"a": 1, "b": [2, 3]})
"""


def is_nested(structure):
    """True for a list, tuple or dict."""
    return isinstance(structure, (list, tuple, dict))


def flatten(structure):
    """The leaves of ``structure`` in order."""
    if isinstance(structure, dict):
        return [leaf for key in sorted(structure) for leaf in flatten(structure[key])]
    if isinstance(structure, (list, tuple)):
        return [leaf for item in structure for leaf in flatten(item)]
    return [structure]


def _rebuild(structure, items):
    if isinstance(structure, dict):
        return type(structure)((key, _rebuild(structure[key], items))
                               for key in sorted(structure))
    if isinstance(structure, (list, tuple)):
        values = [_rebuild(item, items) for item in structure]
        return type(structure)(*values) if hasattr(structure, "_fields") else \
            type(structure)(values)
    return next(items)


def pack_sequence_as(structure, flat_sequence):
    """The leaves ``flat_sequence`` in the nesting of ``structure``."""
    flat_sequence = list(flat_sequence)
    count = len(flatten(structure))
    if len(flat_sequence) != count:
        raise ValueError(f"pack_sequence_as: the structure has {count} leaves, got "
                         f"{len(flat_sequence)} values")
    return _rebuild(structure, iter(flat_sequence))


def assert_same_structure(a, b):
    """Raise ``ValueError`` unless ``a`` and ``b`` nest the same way."""
    if is_nested(a) != is_nested(b) or (is_nested(a) and (
            isinstance(a, dict) != isinstance(b, dict) or len(a) != len(b) or
            isinstance(a, dict) and sorted(a) != sorted(b))):
        raise ValueError(f"The two structures don't have the same nested structure: {a!r} "
                         f"and {b!r}")
    if isinstance(a, dict):
        for key in a:
            assert_same_structure(a[key], b[key])
    elif is_nested(a):
        for x, y in zip(a, b):
            assert_same_structure(x, y)


def map_structure(func, *structures):
    """``func`` applied leaf by leaf to structures of the same nesting."""
    for other in structures[1:]:
        assert_same_structure(structures[0], other)
    columns = zip(*[flatten(s) for s in structures])
    return pack_sequence_as(structures[0], [func(*leaves) for leaves in columns])


def lists_to_tuples(structure):
    """The same structure with every list made a tuple."""
    if isinstance(structure, dict):
        return {key: lists_to_tuples(value) for key, value in structure.items()}
    if isinstance(structure, (list, tuple)):
        values = [lists_to_tuples(item) for item in structure]
        return type(structure)(*values) if hasattr(structure, "_fields") else tuple(values)
    return structure
