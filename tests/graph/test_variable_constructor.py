"""``hiapi.Variable`` takes Keras 3's arguments: a value, or an initializer with a shape."""
import numpy as np
import pytest

import hiapi


def test_a_value_keeps_its_dtype_and_a_python_number_takes_floatx():
    assert hiapi.Variable(np.ones((3, 3))).dtype == np.float64    # as Keras keeps numpy's
    assert hiapi.Variable(0.0, trainable=False).dtype == np.float32
    assert hiapi.Variable(3).dtype == np.int32
    kl = hiapi.Variable(2.5, trainable=False, dtype="float32", name="kl_weight")
    assert (kl.name, kl.trainable, float(kl.numpy())) == ("kl_weight", False, 2.5)


def test_an_initializer_by_name_or_object_with_a_shape():
    ones = hiapi.Variable(initializer="ones", shape=(2, 3), dtype="float32", name="kernel")
    np.testing.assert_array_equal(ones.numpy(), np.ones((2, 3), np.float32))
    normal = hiapi.Variable(hiapi.initializers.RandomNormal(stddev=2.0, seed=1), shape=(4000,))
    assert normal.dtype == np.float32 and 1.8 < normal.numpy().std() < 2.2


@pytest.mark.parametrize("arguments, message", [
    (dict(initializer="zeros"), "initializer .'zeros'. needs shape="),
    (dict(initializer=np.ones(3), shape=(2,)), r"has shape \(3,\), shape=\(2,\) was given"),
    (dict(), "give an initial value or an initializer and a shape"),
])
def test_what_cannot_make_a_variable_says_why(arguments, message):
    with pytest.raises(ValueError, match=message):
        hiapi.Variable(**arguments)
