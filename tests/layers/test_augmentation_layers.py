"""RandomFlip, RandomCrop, RandomRotation and RandomZoom: what each does in training (checked
against numpy with the layer's own counter-based random draws re-derived here), the identity
(or Keras's centre crop) at inference, seeds, training through them, and argument errors."""
import math

import numpy as np
import pytest

from layer_check import check_layer
from test_image_ops import reference as resample

import hiapi
from hiapi import layers
from hiapi.backends.splitmix import splitmix64_uniform

RNG = np.random.default_rng(5)


def images(n=6, h=7, w=8, c=2):
    return RNG.normal(size=(n, h, w, c)).astype(np.float32)


def draws(layer, n, stream, counter=0):
    """The uniform numbers the layer's graph draws: seed + 2 * stream, one per image."""
    shape = (n, 1) if n else ()
    return splitmix64_uniform(np, shape, layer.seed + 2 * stream, counter)


@pytest.mark.parametrize("mode, axes", [("horizontal", (2,)), ("vertical", (1,)),
                                        ("horizontal_and_vertical", (1, 2))])
def test_random_flip(mode, axes):
    x = images(16)
    layer = layers.RandomFlip(mode, seed=3)
    y = layer(x, training=True)
    flip = draws(layer, 16, 0)[:, 0] <= 0.5
    assert 0 < flip.sum() < 16
    np.testing.assert_array_equal(y, np.where(flip[:, None, None, None], np.flip(x, axes), x))
    second = layer(x, training=True)                # the counter moved: new draws
    np.testing.assert_array_equal(second, np.where(
        (draws(layer, 16, 0, counter=1)[:, 0] <= 0.5)[:, None, None, None], np.flip(x, axes),
        x))
    check_layer(lambda: layers.RandomFlip(mode, seed=3), x, lambda x: x)


def test_random_crop_training_window_and_inference_resize():
    x = images(4, 9, 10)
    layer = layers.RandomCrop(5, 6, seed=2)
    y = layer(x, training=True)
    top = int(draws(layer, 0, 0) * (9 - 5 + 1))
    left = int(draws(layer, 0, 1) * (10 - 6 + 1))
    np.testing.assert_array_equal(y, x[:, top:top + 5, left:left + 6])
    # inference: the largest centred window of the target's aspect ratio, resized; halving
    # with half-pixel bilinear sampling is a 2x2 average
    big = images(3, 10, 8)
    window = big[:, 1:9]                                    # 8x8 centred window
    halved = window.reshape(3, 4, 2, 4, 2, 2).mean((2, 4))
    check_layer(lambda: layers.RandomCrop(4, 4, seed=2), big, lambda x: halved, atol=1e-6)
    # exactly the target's size after the centred crop: no resampling
    np.testing.assert_array_equal(layers.RandomCrop(8, 8)(big, training=True), window)


def rotation_rows(angles, h, w):
    rows = []
    for angle in angles:
        cos, sin = math.cos(angle), math.sin(angle)
        rows.append([cos, -sin, ((w - 1) - (cos * (w - 1) - sin * (h - 1))) / 2,
                     sin, cos, ((h - 1) - (sin * (w - 1) + cos * (h - 1))) / 2, 0, 0])
    return np.array(rows)


def test_random_rotation_quarter_turn_is_rot90():
    x = images(3, 6, 6)
    y = layers.RandomRotation((0.25, 0.25), interpolation="nearest")(x, training=True)
    np.testing.assert_array_equal(y, np.rot90(x, 1, axes=(1, 2)))   # counter-clockwise


@pytest.mark.parametrize("fill_mode, interpolation", [("reflect", "bilinear"),
                                                      ("constant", "bilinear"),
                                                      ("wrap", "nearest"),
                                                      ("nearest", "bilinear")])
def test_random_rotation_matches_reference(fill_mode, interpolation):
    x = images(4)
    layer = layers.RandomRotation((-0.2, 0.1), fill_mode=fill_mode,
                                  interpolation=interpolation, fill_value=0.5, seed=9)
    y = layer(x, training=True)
    angles = (-0.2 + draws(layer, 4, 0)[:, 0].astype(np.float64) * 0.3) * 2 * np.pi
    expected = resample(x, rotation_rows(angles, 7, 8), (7, 8), interpolation, fill_mode, 0.5)
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-4)
    check_layer(lambda: layers.RandomRotation(0.1, fill_mode=fill_mode, seed=9), x,
                lambda x: x)


@pytest.mark.parametrize("width_factor", [None, (0.1, 0.4)])
def test_random_zoom_matches_reference(width_factor):
    x = images(5)
    layer = layers.RandomZoom((-0.3, 0.2), width_factor, seed=4)
    y = layer(x, training=True)
    zy = 0.7 + draws(layer, 5, 0)[:, 0].astype(np.float64) * 0.5
    zx = zy if width_factor is None else 1.1 + draws(layer, 5, 1)[:, 0] * 0.3
    rows = np.stack([zx, 0 * zx, 3.5 * (1 - zx), 0 * zx, zy, 3 * (1 - zy), 0 * zx, 0 * zx], 1)
    np.testing.assert_allclose(y, resample(x, rows, (7, 8), "bilinear", "reflect", 0.0),
                               rtol=1e-4, atol=1e-4)
    check_layer(lambda: layers.RandomZoom(0.2, width_factor, seed=4), x, lambda x: x)


def test_augmentation_is_reproducible_under_the_global_seed():
    x = images(8)

    def run():
        hiapi.utils.set_random_seed(42)
        model = hiapi.Sequential([hiapi.Input((7, 8, 2)), layers.RandomFlip(),
                                  layers.RandomRotation(0.1), layers.RandomZoom(0.1)])
        return model(x, training=True)
    np.testing.assert_array_equal(run(), run())


def test_gradients_flow_through_augmentation_in_fit():
    hiapi.utils.set_random_seed(0)
    x, y = images(16, 8, 8, 1), RNG.integers(0, 2, 16)
    model = hiapi.Sequential([
        hiapi.Input((8, 8, 1)), layers.Conv2D(3, 3, padding="same"),
        layers.RandomFlip("horizontal"), layers.RandomRotation(0.05), layers.RandomZoom(0.1),
        layers.RandomCrop(6, 6), layers.Flatten(), layers.Dense(2, activation="softmax")])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    kernel = model.layers[0].get_weights()[0]
    history = model.fit(x, y, epochs=3, batch_size=8, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    assert not np.array_equal(model.layers[0].get_weights()[0], kernel)
    assert model.predict(x, verbose=0).shape == (16, 2)


def test_augmentation_channels_first():
    x = images(4)
    y = layers.RandomFlip("horizontal", seed=1, data_format="channels_first")(
        x.transpose(0, 3, 1, 2), training=True)
    expected = layers.RandomFlip("horizontal", seed=1)(x, training=True)
    np.testing.assert_array_equal(y, expected.transpose(0, 3, 1, 2))


def test_augmentation_argument_errors():
    with pytest.raises(ValueError, match="mode must be one of"):
        layers.RandomFlip("diagonal")
    with pytest.raises(ValueError, match="fill_mode must be one of"):
        layers.RandomRotation(0.1, fill_mode="edge")
    with pytest.raises(ValueError, match="interpolation must be one of"):
        layers.RandomZoom(0.1, interpolation="bicubic")
    assert layers.RandomRotation((0.3, 0.1)).factor == (0.1, 0.3)      # sorted, as Keras
    with pytest.raises(ValueError, match="factor must be a number or a pair of numbers"):
        layers.RandomRotation((0.1, 0.2, 0.3))
    with pytest.raises(ValueError, match=r"within \[-1.0, 1.0\]"):
        layers.RandomZoom(1.5)
    with pytest.raises(ValueError, match="height must be a positive integer"):
        layers.RandomCrop(0, 4)
    with pytest.raises(ValueError, match=r"expected rank 4, got shape \(2, 8, 3\)"):
        layers.RandomFlip()(np.ones((2, 8, 3), np.float32))
