"""hiapi.utils.pad_sequences against Keras's documented behaviour, and the lowercase
regularizer aliases."""
import numpy as np
import pytest

import hiapi


def test_pad_sequences_pre_and_post():
    sequences = [[1, 2, 3], [4, 5], [6]]
    np.testing.assert_array_equal(hiapi.utils.pad_sequences(sequences),
                                  [[1, 2, 3], [0, 4, 5], [0, 0, 6]])
    np.testing.assert_array_equal(hiapi.utils.pad_sequences(sequences, padding="post", value=-1),
                                  [[1, 2, 3], [4, 5, -1], [6, -1, -1]])
    np.testing.assert_array_equal(hiapi.utils.pad_sequences(sequences, maxlen=2),
                                  [[2, 3], [4, 5], [0, 6]])
    np.testing.assert_array_equal(hiapi.utils.pad_sequences(sequences, maxlen=2,
                                                            truncating="post"),
                                  [[1, 2], [4, 5], [0, 6]])
    assert hiapi.utils.pad_sequences(sequences).dtype == np.int32


def test_pad_sequences_steps_dtypes_and_empty_sequences():
    steps = [np.ones((2, 3)), np.zeros((0, 3)), 2 * np.ones((1, 3))]
    out = hiapi.utils.pad_sequences(steps, dtype="float32", padding="post")
    assert out.shape == (3, 2, 3) and out.dtype == np.float32
    np.testing.assert_array_equal(out[2], [[2, 2, 2], [0, 0, 0]])
    np.testing.assert_array_equal(out[1], 0)
    words = hiapi.utils.pad_sequences([["a", "b"], ["c"]], dtype=object, value="")
    assert words.tolist() == [["a", "b"], ["", "c"]]
    floats = hiapi.utils.pad_sequences([[0.5, 1.5]], maxlen=3, dtype="float32")
    np.testing.assert_array_equal(floats, [[0.0, 0.5, 1.5]])


@pytest.mark.parametrize("call, message", [
    (lambda: hiapi.utils.pad_sequences([[1]], padding="middle"), "padding must be 'pre'"),
    (lambda: hiapi.utils.pad_sequences([[1]], truncating="x"), "truncating must be 'pre'"),
    (lambda: hiapi.utils.pad_sequences([[1], 2]), "position 1 is 2"),
    (lambda: hiapi.utils.pad_sequences([["a"]], value="x"), "set dtype=object"),
    (lambda: hiapi.utils.pad_sequences([np.ones((1, 2)), np.ones((1, 3))]),
     r"position 1 have shape \(3,\).*\(2,\)")])
def test_pad_sequences_errors_name_the_problem(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_regularizer_aliases_are_keras_3s():
    assert hiapi.regularizers.l2(0.5).get_config() == {"l2": 0.5}       # Keras's L2 class
    assert hiapi.regularizers.l1(0.2).get_config() == {"l1": 0.2}
    assert hiapi.regularizers.l1_l2(l1=0.1).get_config() == {"l1": 0.1, "l2": 0.0}
    assert hiapi.regularizers.get("l1_l2").get_config() == {"l1": 0.01, "l2": 0.01}
    layer = hiapi.layers.Dense(2, kernel_regularizer=hiapi.regularizers.l2(1e-4))
    layer(np.ones((1, 3), "float32"))
    assert layer.kernel_regularizer.l2 == 1e-4


def test_l1_and_l2_are_keras_classes_and_serialize_as_keras_does():
    """The serialization guide prints keras.saving.serialize_keras_object(L1(0.005)): Keras's
    L1 is a class of its own whose config is {"l1": ...}; hiapi's was an L1L2."""
    entry = hiapi.saving.serialize_keras_object(hiapi.regularizers.L1(0.005))
    assert entry == {"module": "keras.regularizers", "class_name": "L1",
                     "config": {"l1": 0.005}, "registered_name": None}
    again = hiapi.saving.deserialize_keras_object(entry)
    assert type(again) is hiapi.regularizers.L1 and again.l1 == 0.005
    assert type(hiapi.regularizers.get({"class_name": "L2", "config": {"l2": 0.3}})) is \
        hiapi.regularizers.L2
    x = np.array([[1.0, -2.0], [0.5, 0.0]], "float32")
    layer = hiapi.layers.Dense(2, use_bias=False, kernel_regularizer=hiapi.regularizers.L1(0.5))
    layer.build((None, 2))
    layer.kernel.assign(x)
    model = hiapi.Sequential([hiapi.Input((2,)), layer])
    model.compile(optimizer="sgd", loss="mse")
    total = model.evaluate(np.zeros((1, 2), "float32"), np.zeros((1, 2), "float32"), verbose=0)
    assert total == pytest.approx(0.5 * np.abs(x).sum())
    assert repr(layer) == f"<Dense name={layer.name}, built=True>"
