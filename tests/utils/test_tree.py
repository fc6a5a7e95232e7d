"""``hiapi.tree``: Keras's helpers for nested structures."""
import collections

import pytest

from hiapi import tree


def test_flatten_and_pack_keep_keras_order_and_types():
    structure = {"b": [1, (2, None)], "a": 3}
    assert tree.flatten(structure) == [3, 1, 2, None]       # sorted keys; None is a leaf
    packed = tree.pack_sequence_as(structure, [30, 10, 20, 40])
    assert packed == {"a": 30, "b": [10, (20, 40)]}
    assert tree.is_nested([1]) and not tree.is_nested(1)
    with pytest.raises(ValueError, match="has 4 leaves, got 3"):
        tree.pack_sequence_as(structure, [1, 2, 3])


def test_map_structure_over_several_structures_and_namedtuples():
    Pair = collections.namedtuple("Pair", "x y")
    got = tree.map_structure(lambda a, b: a + b, Pair(1, [2]), Pair(10, [20]))
    assert got == Pair(11, [22]) and isinstance(got, Pair)
    with pytest.raises(ValueError, match="same nested structure"):
        tree.map_structure(lambda a, b: a, [1, 2], [1])
    assert tree.lists_to_tuples([1, [2, {"k": [3]}]]) == (1, (2, {"k": (3,)}))
