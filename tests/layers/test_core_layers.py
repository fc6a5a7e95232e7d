"""Forward maths of the core layers against plain numpy, and their configuration errors."""
import numpy as np
import pytest

import hiapi
from hiapi import layers


def test_dense_forward_matches_numpy():
    dense = layers.Dense(4, activation="relu")
    x = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)
    y = dense(x)
    kernel, bias = dense.get_weights()
    assert kernel.shape == (3, 4) and bias.shape == (4,)
    np.testing.assert_allclose(y, np.maximum(x @ kernel + bias, 0), rtol=1e-6)


def test_dense_on_rank3_input_multiplies_last_axis():
    dense = layers.Dense(2, use_bias=False)
    x = np.random.default_rng(1).normal(size=(2, 5, 3)).astype(np.float32)
    y = dense(x)
    (kernel,) = dense.get_weights()
    np.testing.assert_allclose(y, x @ kernel, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name, reference", [
    ("relu", lambda x: np.maximum(x, 0)),
    ("sigmoid", lambda x: 1 / (1 + np.exp(-x))),
    ("tanh", np.tanh),
    ("linear", lambda x: x),
    ("softmax", lambda x: np.exp(x) / np.exp(x).sum(-1, keepdims=True)),
    ("elu", lambda x: np.where(x > 0, x, np.exp(x) - 1)),
    ("softplus", lambda x: np.log1p(np.exp(x))),
])
def test_activation_layer(name, reference):
    x = np.random.default_rng(2).normal(size=(4, 6)).astype(np.float32) * 3
    np.testing.assert_allclose(layers.Activation(name)(x), reference(x), rtol=1e-5, atol=1e-6)


def test_sigmoid_does_not_overflow():
    x = np.array([[-1000.0, 0.0, 1000.0]], np.float32)
    np.testing.assert_allclose(layers.Activation("sigmoid")(x), [[0.0, 0.5, 1.0]])


def test_flatten_keeps_batch_and_orders_like_numpy():
    x = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
    np.testing.assert_array_equal(layers.Flatten()(x), x.reshape(2, 12))
    np.testing.assert_array_equal(layers.Flatten(data_format="channels_first")(x),
                                  x.transpose(0, 2, 1).reshape(2, 12))


def test_dense_rejects_wrong_input_size_naming_layer():
    dense = layers.Dense(3, name="probe")
    dense(np.ones((2, 4), np.float32))
    with pytest.raises(ValueError, match=r"layer 'probe'.*axis -1 to have size 4.*\(2, 5\)"):
        dense(np.ones((2, 5), np.float32))


def test_bad_configuration_errors():
    with pytest.raises(ValueError, match="units must be a positive integer"):
        layers.Dense(0)
    with pytest.raises(ValueError, match="Unknown activation 'relux'"):
        layers.Dense(3, activation="relux")
    with pytest.raises(ValueError, match="Unknown initializer"):
        layers.Dense(3, kernel_initializer="nope")
    with pytest.raises(TypeError, match="unexpected keyword"):
        layers.Dense(3, unit=4)


def test_unbuilt_layer_errors_clearly():
    dense = layers.Dense(3, name="lazy")
    with pytest.raises(ValueError, match="'lazy' has not been built yet"):
        dense.count_params()
    with pytest.raises(ValueError, match="has not been built yet"):
        dense.set_weights([np.zeros((2, 3)), np.zeros(3)])


def test_set_weights_checks_shapes():
    dense = layers.Dense(3)
    dense(np.ones((1, 2), np.float32))
    with pytest.raises(ValueError, match=r"has shape \(2, 3\), set_weights got shape \(3, 3\)"):
        dense.set_weights([np.zeros((3, 3)), np.zeros(3)])


def test_default_names_are_unique_like_keras():
    hiapi.utils.clear_session()
    assert [layers.Dense(1).name for _ in range(3)] == ["dense", "dense_1", "dense_2"]


def test_glorot_uniform_limit_and_he_normal_scale():
    hiapi.utils.set_random_seed(0)
    w = hiapi.initializers.get("glorot_uniform")((300, 200))
    limit = np.sqrt(6 / 500)
    assert np.abs(w).max() <= limit and np.abs(w).max() > 0.95 * limit
    h = hiapi.initializers.get("he_normal")((1000, 500))
    assert abs(h.std() - np.sqrt(2 / 1000)) < 0.05 * np.sqrt(2 / 1000)
    assert np.abs(h).max() <= 2 * np.sqrt(2 / 1000) / 0.87962566103423978 + 1e-6
    np.testing.assert_array_equal(hiapi.initializers.get("zeros")((2, 2)), np.zeros((2, 2)))
    r = hiapi.initializers.get("random_normal")((10000,))
    assert abs(r.std() - 0.05) < 0.005


def test_initializer_aliases_as_in_keras():
    u = hiapi.initializers.get("uniform")((10000,))           # RandomUniform(-0.05, 0.05)
    assert -0.05 <= u.min() < -0.049 and 0.049 < u.max() <= 0.05
    assert abs(hiapi.initializers.get("normal")((10000,)).std() - 0.05) < 0.005
    np.testing.assert_array_equal(hiapi.initializers.get("one")((2,)), np.ones(2))
    np.testing.assert_array_equal(hiapi.initializers.get("zero")((2,)), np.zeros(2))


def test_to_categorical():
    np.testing.assert_array_equal(hiapi.utils.to_categorical([0, 2, 1], 3),
                                  [[1, 0, 0], [0, 0, 1], [0, 1, 0]])
    assert hiapi.utils.to_categorical(np.array([[1], [3]])).shape == (2, 4)
    with pytest.raises(ValueError, match="must lie in"):
        hiapi.utils.to_categorical([0, 5], 3)
