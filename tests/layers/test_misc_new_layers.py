"""Cropping1D/2D, RepeatVector, Identity, GaussianNoise, GaussianDropout,
SpatialDropout1D/2D/3D and GroupNormalization against numpy, through ``check_layer``."""
import numpy as np
import pytest

from layer_check import check_layer

import hiapi
from hiapi import layers

RNG = np.random.default_rng(8)


def randn(*shape):
    return RNG.normal(size=shape).astype(np.float32)


def test_cropping():
    x = randn(2, 7, 6, 3)
    check_layer(lambda: layers.Cropping2D(((1, 2), (0, 3))), x, lambda x: x[:, 1:-2, :3])
    check_layer(lambda: layers.Cropping2D((2, 1)), x, lambda x: x[:, 2:-2, 1:-1])
    check_layer(lambda: layers.Cropping2D(1, data_format="channels_first"),
                x.transpose(0, 3, 1, 2), lambda x: x[:, :, 1:-1, 1:-1])
    check_layer(lambda: layers.Cropping1D((2, 0)), randn(2, 5, 4), lambda x: x[:, 2:])
    with pytest.raises(ValueError, match="leaves nothing"):
        layers.Cropping1D(3)(randn(2, 5, 4))
    with pytest.raises(ValueError, match="non-negative int or a pair"):
        layers.Cropping2D(((1, -1), (0, 0)))


def test_repeat_vector_and_identity():
    check_layer(lambda: layers.RepeatVector(3), randn(4, 5),
                lambda x: np.repeat(x[:, None], 3, axis=1))
    check_layer(lambda: layers.Identity(), randn(4, 5), lambda x: x)
    with pytest.raises(ValueError, match="n must be a positive integer"):
        layers.RepeatVector(0)


def test_gaussian_noise():
    x = np.ones((200, 500), np.float32)
    layer = layers.GaussianNoise(0.3, seed=1)
    np.testing.assert_array_equal(layer(x), x)                   # inference: identity
    noisy = layer(x, training=True)
    assert abs((noisy - 1).mean()) < 0.003 and abs((noisy - 1).std() - 0.3) < 0.003
    assert not np.array_equal(layer(x, training=True), noisy)    # fresh noise every step
    again = layers.GaussianNoise(0.3, seed=1)(x, training=True)
    np.testing.assert_array_equal(again, noisy)                  # same seed, same noise
    check_layer(lambda: layers.GaussianNoise(0.1, seed=2), randn(4, 6), lambda x: x)
    with pytest.raises(ValueError, match=r"stddev must be a number in \[0, 1\]"):
        layers.GaussianNoise(-0.1)


def test_gaussian_dropout():
    x = np.full((200, 500), 2.0, np.float32)
    layer = layers.GaussianDropout(0.2, seed=3)
    np.testing.assert_array_equal(layer(x), x)
    noisy = layer(x, training=True) / 2.0
    assert abs(noisy.mean() - 1) < 0.003 and abs(noisy.std() - np.sqrt(0.2 / 0.8)) < 0.003
    check_layer(lambda: layers.GaussianDropout(0.5, seed=2), randn(4, 6), lambda x: x)
    with pytest.raises(ValueError, match=r"rate must be a number in \[0, 1\)"):
        layers.GaussianDropout(1.0)


@pytest.mark.parametrize("cls, shape, channel_axis, data_format", [
    (layers.SpatialDropout1D, (8, 20, 16), 2, None),
    (layers.SpatialDropout2D, (8, 5, 6, 16), 3, None),
    (layers.SpatialDropout2D, (8, 16, 5, 6), 1, "channels_first"),
    (layers.SpatialDropout3D, (8, 3, 4, 5, 16), 4, None)])
def test_spatial_dropout_drops_whole_channels(cls, shape, channel_axis, data_format):
    x = np.ones(shape, np.float32)
    kwargs = {} if data_format is None else {"data_format": data_format}
    layer = cls(0.5, seed=4, **kwargs)
    np.testing.assert_array_equal(layer(x), x)
    y = layer(x, training=True)
    spatial = tuple(a for a in range(1, len(shape)) if a != channel_axis)
    kept = y.max(spatial)
    assert set(np.unique(y)) <= {0.0, 2.0}
    np.testing.assert_array_equal(y.min(spatial), kept)          # constant over each map
    assert 0.3 < (kept > 0).mean() < 0.7
    check_layer(lambda: cls(0.3, seed=5, **kwargs), randn(*shape[:1], *shape[1:]),
                lambda x: x)
    with pytest.raises(ValueError, match="expected rank"):
        cls(0.5)(np.ones((2,) * (len(shape) + 1), np.float32))


def group_norm_reference(x, gamma, beta, groups, epsilon=1e-3):
    n, channels = x.shape[0], x.shape[-1]
    g = x.reshape(n, -1, groups, channels // groups).astype(np.float64)
    mean = g.mean((1, 3), keepdims=True)
    var = g.var((1, 3), keepdims=True)
    return ((g - mean) / np.sqrt(var + epsilon)).reshape(x.shape) * gamma + beta


@pytest.mark.parametrize("groups", [1, 2, 4, -1])
def test_group_normalization(groups):
    x = randn(3, 5, 4, 8) * 3 + 1
    g = 8 if groups == -1 else groups
    check_layer(lambda: layers.GroupNormalization(groups, gamma_initializer="random_normal",
                                                  beta_initializer="random_normal"), x,
                lambda x, gamma, beta: group_norm_reference(x, gamma, beta, g),
                [("gamma", (8,)), ("beta", (8,))], rtol=1e-4, atol=1e-4)


def test_group_normalization_channels_first_and_errors():
    x = randn(2, 6, 3, 3)
    y = layers.GroupNormalization(3, axis=1)(x)
    expected = group_norm_reference(x.transpose(0, 2, 3, 1), 1.0, 0.0, 3)
    np.testing.assert_allclose(y, expected.transpose(0, 3, 1, 2), rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="cannot be split into 4 equal groups"):
        layers.GroupNormalization(4)(randn(2, 3, 6))
    with pytest.raises(ValueError, match="groups must be a positive integer or -1"):
        layers.GroupNormalization(0)
    model = hiapi.Sequential([hiapi.Input((4, 4, 64)), layers.GroupNormalization()])
    assert model.count_params() == 128                      # Keras: 64 gamma + 64 beta


def test_model_with_new_layers_saves_and_loads(tmp_path):
    hiapi.utils.set_random_seed(1)
    x = RNG.integers(0, 256, (8, 12, 12, 3)).astype(np.float32)
    y = RNG.integers(0, 3, 8)
    model = hiapi.Sequential([
        hiapi.Input((12, 12, 3)), layers.Rescaling(1 / 255), layers.RandomFlip(seed=1),
        layers.RandomZoom(0.1, seed=2), layers.RandomCrop(10, 10, seed=3),
        layers.SeparableConv2D(4, 3, padding="same"), layers.GroupNormalization(2),
        layers.DepthwiseConv2D(3, depth_multiplier=2), layers.SpatialDropout2D(0.2),
        layers.GaussianNoise(0.05), layers.Conv2DTranspose(3, 3, strides=2, padding="same"),
        layers.Cropping2D(2), layers.Identity(), layers.GlobalAveragePooling2D(),
        layers.RepeatVector(2), layers.Conv1D(4, 2, padding="causal"), layers.Flatten(),
        layers.GaussianDropout(0.1), layers.Dense(3, activation="softmax")])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    model.fit(x, y, epochs=2, batch_size=4, verbose=0)
    model.save(tmp_path / "m.hiapi")
    loaded = hiapi.models.load_model(tmp_path / "m.hiapi")
    assert [type(l).__name__ for l in loaded.layers] == [type(l).__name__ for l in model.layers]
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0),
                               rtol=1e-5, atol=1e-6)


def test_augmented_training_resumes_bit_identically(tmp_path):
    x = RNG.normal(size=(16, 10, 10, 1)).astype(np.float32)
    y = RNG.integers(0, 2, 16)

    def make():
        hiapi.utils.set_random_seed(7)
        model = hiapi.Sequential([
            hiapi.Input((10, 10, 1)), layers.RandomFlip(), layers.RandomRotation(0.1),
            layers.RandomCrop(8, 8), layers.GaussianNoise(0.1), layers.Flatten(),
            layers.Dense(2, activation="softmax")])
        model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
        return model
    straight = make()
    straight.fit(x, y, epochs=2, batch_size=4, verbose=0)
    first = make()
    first.fit(x, y, epochs=1, batch_size=4, verbose=0)
    first.save(tmp_path / "half.hiapi")
    resumed = hiapi.models.load_model(tmp_path / "half.hiapi")
    resumed.fit(x, y, initial_epoch=1, epochs=2, batch_size=4, verbose=0)
    for a, b in zip(straight.get_weights(), resumed.get_weights()):
        np.testing.assert_array_equal(a, b)
