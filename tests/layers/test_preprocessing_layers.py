"""Rescaling and Normalization: forward maths, adapt over arrays and over batches (same
numbers as one pass), given statistics, invert, weights and Keras's parameter count, saving."""
import numpy as np
import pytest

from layer_check import check_layer

import hiapi
from hiapi import layers

RNG = np.random.default_rng(11)


def test_rescaling_uint8_images():
    x = RNG.integers(0, 256, (3, 4, 4, 3)).astype(np.uint8)
    y = layers.Rescaling(1 / 127.5, offset=-1)(x)
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, x / 127.5 - 1, rtol=1e-6, atol=1e-6)
    check_layer(lambda: layers.Rescaling([0.5, 2.0, 1.0], offset=0.25),
                RNG.normal(size=(2, 3, 3)).astype(np.float32),
                lambda x: x * np.array([0.5, 2.0, 1.0], np.float32) + 0.25, train=False)
    with pytest.raises(ValueError, match="scale must be a finite number"):
        layers.Rescaling("1/255")


def test_normalization_adapt_array_matches_numpy():
    data = (RNG.normal(size=(200, 3)) * [1, 5, 0.1] + [0, -3, 10]).astype(np.float32)
    norm = layers.Normalization()
    norm.adapt(data)
    mean, variance, count = norm.get_weights()
    np.testing.assert_allclose(mean, data.mean(0), rtol=1e-5)
    np.testing.assert_allclose(variance, data.var(0), rtol=1e-4)
    assert count.shape == () and norm.count_params() == 7            # Keras 3: 3 + 3 + 1
    assert norm.trainable_weights == []
    out = norm(data)
    np.testing.assert_allclose(out.mean(0), 0, atol=1e-4)
    np.testing.assert_allclose(out.std(0), 1, rtol=1e-3)
    check_layer(lambda: _adapted(data), data[:8],
                lambda x, m, v, c: (x - m) / np.sqrt(v),
                [("mean", (3,)), ("variance", (3,)), ("count", ())], train=False)


def _adapted(data, **kwargs):
    norm = layers.Normalization(**kwargs)
    norm.adapt(data)
    return norm


def test_normalization_adapt_batches_equals_one_pass():
    data = RNG.normal(size=(103, 4, 2)).astype(np.float64) * 3 + 1
    batches = (data[i:i + 16] for i in range(0, len(data), 16))   # a generator, uneven tail
    streamed = _adapted(batches, axis=(1, 2))
    whole = _adapted(data, axis=(1, 2))
    for a, b in zip(streamed.get_weights()[:2], whole.get_weights()[:2]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    xy_batches = [(data[:50], np.zeros(50)), (data[50:], np.zeros(53))]   # (x, y) batches
    np.testing.assert_allclose(_adapted(xy_batches, axis=(1, 2)).get_weights()[0],
                               whole.get_weights()[0], rtol=1e-5, atol=1e-6)


def test_normalization_axis_none_and_given_statistics():
    norm = _adapted(np.array([1.0, 2.0, 3.0, 4.0, 5.0], np.float32), axis=None)
    np.testing.assert_allclose(norm(np.array([1.0, 2.0, 3.0], np.float32)),
                               [-1.4142135, -0.70710677, 0.0], rtol=1e-5)    # Keras's example
    given = layers.Normalization(mean=3.0, variance=2.0)
    np.testing.assert_allclose(given(np.array([[1.0], [2.0], [3.0]], np.float32)),
                               [[-1.4142135], [-0.70710677], [0.0]], rtol=1e-5)
    assert given.weights == []
    check_layer(lambda: layers.Normalization(mean=[1.0, 2.0], variance=[4.0, 0.0]),
                np.ones((3, 2), np.float32),
                lambda x: (x - [1.0, 2.0]) / np.maximum(np.sqrt([4.0, 0.0]), 1e-7),
                train=False)


def test_normalization_invert_undoes_it():
    data = np.array([[0.0, 7.0, 4.0], [2.0, 9.0, 6.0], [0.0, 7.0, 4.0], [2.0, 9.0, 6.0]],
                    np.float32)
    inverse = _adapted(data, invert=True)
    np.testing.assert_allclose(inverse(np.array([[1.0, 2.0, 3.0]], np.float32)),
                               [[2.0, 10.0, 8.0]], rtol=1e-6)          # Keras's example
    forward = _adapted(data)
    np.testing.assert_allclose(inverse(forward(data)), data, rtol=1e-5, atol=1e-5)


def test_normalization_errors():
    with pytest.raises(ValueError, match="set both mean and variance"):
        layers.Normalization(mean=1.0)
    with pytest.raises(ValueError, match="same shape"):
        layers.Normalization(mean=[1.0, 2.0], variance=[1.0])
    norm = _adapted(np.ones((4, 3), np.float32))
    with pytest.raises(ValueError, match=r"adapt\(\) got data of shape \(4, 5\)"):
        norm.adapt(np.ones((4, 5), np.float32))
    with pytest.raises(ValueError, match="NaN or infinite"):
        layers.Normalization().adapt(np.array([[1.0], [np.nan]]))
    with pytest.raises(ValueError, match="got no data"):
        layers.Normalization().adapt([])
    with pytest.raises(ValueError, match="cannot change the mean and variance given"):
        layers.Normalization(mean=0.0, variance=1.0).adapt(np.ones((2, 1)))


def test_adapted_normalization_trains_saves_and_loads(tmp_path):
    hiapi.utils.set_random_seed(0)
    x = (RNG.normal(size=(64, 3)) * 10 + 5).astype(np.float32)
    y = x @ np.array([[0.1], [-0.2], [0.05]], np.float32)
    model = hiapi.Sequential([hiapi.Input((3,)), _adapted(x), layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    stats = model.layers[0].get_weights()
    model.fit(x, y, epochs=2, verbose=0)
    for before, after in zip(stats, model.layers[0].get_weights()):
        np.testing.assert_array_equal(before, after)      # adapted statistics do not train
    model.save(tmp_path / "norm.hiapi")
    loaded = hiapi.models.load_model(tmp_path / "norm.hiapi")
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0),
                               rtol=1e-6)


def test_adapt_after_the_model_is_built_takes_effect():
    norm = layers.Normalization()
    model = hiapi.Sequential([hiapi.Input((2,)), norm])
    x = np.array([[1.0, 2.0], [3.0, 6.0]], np.float32)
    np.testing.assert_array_equal(model.predict(x, verbose=0), x)     # mean 0, variance 1
    norm.adapt(x)
    np.testing.assert_allclose(model.predict(x, verbose=0), [[-1, -1], [1, 1]], rtol=1e-6)
