"""Embedding ids outside [0, input_dim) are errors naming the layer, the id and the valid range,
on every installed backend (numpy indexing would read -1 as the last row and train on it)."""
import importlib.util

import numpy as np
import pytest

import hiapi
from hiapi import layers
from hiapi.graph import Function, ops, placeholder

BACKENDS = ["numpy"] + [name for name in ("numba", "cupy")
                        if importlib.util.find_spec(name) is not None]


@pytest.fixture(params=BACKENDS)
def backend(request):
    previous = hiapi.backends.get_backend().name
    try:
        hiapi.backends.set_backend(request.param)
    except RuntimeError as error:          # cupy installed, but no GPU visible
        pytest.skip(str(error))
    yield request.param
    hiapi.backends.set_backend(previous)


def message(name, bad, rows=10):
    return (rf"Embedding '{name}' \(input_dim={rows}\): index {bad} is out of range; valid "
            rf"indices are \[0, {rows}\)")


@pytest.mark.parametrize("bad", [-1, -10, 10, 11, 2**40])
def test_out_of_range_id_names_layer_value_and_range(backend, bad):
    emb = layers.Embedding(10, 3, name="words")
    emb(np.array([[0, 9]]))                                      # builds; in range is fine
    with pytest.raises(ValueError, match=message("words", bad)):
        emb(np.array([[1, bad], [2, 3]]))


@pytest.mark.parametrize("dtype", ["int32", "int8", "uint8", "int64", "float32"])
def test_every_index_dtype_is_checked(backend, dtype):
    emb = layers.Embedding(10, 2, name=f"ids_{dtype}")
    ids = np.array([[3, 9]], dtype)
    np.testing.assert_array_equal(emb(ids), emb.get_weights()[0][ids.astype(int)])
    bad = np.array([[3, 10 if dtype == "uint8" else -1]], dtype)
    with pytest.raises(ValueError, match=message(f"ids_{dtype}", 10 if dtype == "uint8" else -1)):
        emb(bad)


def test_fit_with_a_negative_id_fails_before_any_weight_changes(backend):
    model = hiapi.Sequential([hiapi.Input(shape=(4,), dtype="int64"),
                              layers.Embedding(10, 3, name="tokens"),
                              layers.Flatten(), layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    before = model.get_weights()
    x = np.array([[1, 2, 3, 4], [5, 6, -1, 8]])
    with pytest.raises(ValueError, match=message("tokens", -1)):
        model.fit(x, np.zeros((2, 1), np.float32), batch_size=2, verbose=0)
    for old, new in zip(before, model.get_weights()):       # cupy too: checks read first
        np.testing.assert_array_equal(old, new)
    with pytest.raises(ValueError, match=message("tokens", 10)):
        model.predict(x + 2, verbose=0)


def test_gather_op_range_check_without_a_layer(backend):
    table, ids = placeholder((4, 2, 3)), placeholder((None,), "int64")
    f = Function([table, ids], ops.gather(table, ids))
    values = np.arange(24, dtype=np.float32).reshape(4, 2, 3)
    np.testing.assert_array_equal(f(values, np.array([3, 0, 3])), values[[3, 0, 3]])
    with pytest.raises(ValueError, match=r"^gather: index 4 is out of range; valid indices "
                                         r"are \[0, 4\) for a table of 4 rows$"):
        f(values, np.array([0, 4]))
    np.testing.assert_array_equal(f(values, np.array([], np.int64)).shape, (0, 2, 3))


def test_embedding_weights_argument_sets_the_table():
    table = np.arange(12, dtype=np.float32).reshape(4, 3)
    for weights in (table, [table]):
        emb = layers.Embedding(4, 3, weights=weights)
        np.testing.assert_array_equal(emb(np.array([[2, 0]])), table[[[2, 0]]])
    with pytest.raises(ValueError):
        layers.Embedding(4, 3, weights=np.zeros((5, 3)))
