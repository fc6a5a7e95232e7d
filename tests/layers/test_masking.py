"""Masks as Keras propagates them: a padded batch gives every sequence the outputs it gets
when run alone, through Embedding(mask_zero=True) or Masking, recurrent layers (both
directions), Dense/Dropout on 3-D inputs, GlobalAveragePooling1D, and the loss."""
import numpy as np
import pytest

import hiapi
from hiapi import layers

RNG = np.random.default_rng(7)
IDS = np.array([[3, 4, 2, 0, 0], [1, 2, 3, 4, 5], [6, 0, 0, 0, 0]])
LENGTHS = [3, 5, 1]


def _ids_model(make_body, steps):
    inputs = hiapi.Input((steps,), dtype="int64")
    return hiapi.Model(inputs, make_body(inputs))


def _alone_and_padded(make_layers, return_sequences):
    """Outputs of the padded batch and of each sequence run alone (the same layers)."""
    embed, *rest = make_layers()

    def body(inputs):
        x = embed(inputs)
        for layer in rest:
            x = layer(x)
        return x
    padded = _ids_model(body, IDS.shape[1]).predict(IDS, verbose=0)
    alone = [_ids_model(body, n).predict(IDS[i:i + 1, :n], verbose=0)[0]
             for i, n in enumerate(LENGTHS)]
    return padded, alone


@pytest.mark.parametrize("cls", [layers.SimpleRNN, layers.LSTM, layers.GRU])
@pytest.mark.parametrize("go_backwards", [False, True])
def test_recurrent_skips_masked_steps(cls, go_backwards):
    padded, alone = _alone_and_padded(lambda: [
        layers.Embedding(10, 3, mask_zero=True), cls(4, go_backwards=go_backwards)], False)
    for i in range(len(LENGTHS)):
        np.testing.assert_allclose(padded[i], alone[i], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("cls", [layers.SimpleRNN, layers.LSTM, layers.GRU])
def test_recurrent_sequences_repeat_the_last_real_output_on_padding(cls):
    padded, alone = _alone_and_padded(lambda: [
        layers.Embedding(10, 3, mask_zero=True), cls(4, return_sequences=True),
        layers.Dropout(0.5), layers.Dense(2)], True)
    for i, n in enumerate(LENGTHS):
        np.testing.assert_allclose(padded[i, :n], alone[i], rtol=1e-5, atol=1e-6)
        for t in range(n, IDS.shape[1]):      # Keras 3: a masked step repeats the last output
            np.testing.assert_allclose(padded[i, t], alone[i][-1], rtol=1e-5, atol=1e-6)


def test_leading_padding_gives_zero_outputs_and_unchanged_state():
    layer = layers.SimpleRNN(3, return_sequences=True, return_state=True)
    x = RNG.normal(size=(2, 4, 2)).astype(np.float32)
    mask = np.array([[False, False, True, True], [True, True, True, True]])
    sequences, state = layer(x, mask=mask)
    np.testing.assert_array_equal(sequences[0, :2], 0.0)
    alone, alone_state = layer(x[:1, 2:])
    np.testing.assert_allclose(sequences[0, 2:], alone[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(state[0], alone_state[0], rtol=1e-5, atol=1e-6)


def test_masking_layer_zeroes_and_masks_steps():
    x = RNG.normal(size=(2, 4, 3)).astype(np.float32)
    x[0, 2:] = 0.0
    x[1, 1] = 0.0
    y = layers.Masking(0.0)(x)
    np.testing.assert_array_equal(y, x)
    x[0, 3] = 7.0       # all features equal mask_value 7: zeroed
    np.testing.assert_array_equal(layers.Masking(7.0)(x)[0, 3], 0.0)
    inputs = hiapi.Input((4, 3))
    masked = layers.Masking(0.0)(inputs)
    mask = hiapi.graph.Function([inputs], [masked._keras_mask])
    np.testing.assert_array_equal(mask(x)[0], np.any(x != 0.0, axis=-1))
    config = layers.Masking(2.5).get_config()
    assert layers.Masking.from_config(config).mask_value == 2.5


def test_masking_then_lstm_matches_unpadded():
    x = RNG.normal(size=(3, 6, 2)).astype(np.float32)
    lengths = [6, 2, 4]
    for i, n in enumerate(lengths):
        x[i, n:] = 0.0
    lstm = layers.LSTM(5)
    inputs = hiapi.Input((6, 2))
    padded = hiapi.Model(inputs, lstm(layers.Masking()(inputs))).predict(x, verbose=0)
    for i, n in enumerate(lengths):
        np.testing.assert_allclose(padded[i], lstm(x[i:i + 1, :n])[0], rtol=1e-5, atol=1e-6)


def test_global_average_pooling_averages_real_steps():
    padded, alone = _alone_and_padded(lambda: [
        layers.Embedding(10, 3, mask_zero=True), layers.Dense(4),
        layers.GlobalAveragePooling1D()], False)
    for i in range(len(LENGTHS)):
        np.testing.assert_allclose(padded[i], alone[i], rtol=1e-5, atol=1e-6)
    x = RNG.normal(size=(2, 4, 3)).astype(np.float32)        # (batch, channels, steps)
    mask = np.array([[True, True, False], [True, False, False]])
    first = layers.GlobalAveragePooling1D(data_format="channels_first")(x, mask=mask)
    np.testing.assert_allclose(first, [x[0, :, :2].mean(-1), x[1, :, :1].mean(-1)], rtol=1e-6)
    x = np.ones((1, 3, 2), np.float32)
    all_masked = layers.GlobalAveragePooling1D()(x, mask=np.zeros((1, 3), bool))
    np.testing.assert_array_equal(all_masked, 0.0)      # no 0/0


def test_the_loss_ignores_padded_steps():
    hiapi.utils.set_random_seed(3)
    model = hiapi.Sequential([hiapi.Input((5,), dtype="int64"),
                              layers.Embedding(10, 3, mask_zero=True),
                              layers.GRU(4, return_sequences=True),
                              layers.Dense(3, activation="softmax")])
    model.compile("sgd", "sparse_categorical_crossentropy")
    labels = np.array([[0, 1, 2, 0, 0], [1, 1, 1, 1, 1], [2, 0, 0, 0, 0]])
    probs = model.predict(IDS, verbose=0)
    entropy = -np.log(np.take_along_axis(probs, labels[..., None], -1)[..., 0])
    real = IDS != 0
    loss = model.evaluate(IDS, labels, verbose=0)
    np.testing.assert_allclose(loss, entropy[real].mean(), rtol=1e-5)
    other = labels.copy()
    other[~real] = 2                   # labels under the padding do not count
    assert model.evaluate(IDS, other, verbose=0) == pytest.approx(loss, rel=1e-6)
    before = model.get_weights()
    model.fit(IDS, labels, epochs=3, verbose=0)
    assert model.evaluate(IDS, labels, verbose=0) < loss
    assert not all(np.array_equal(a, b) for a, b in zip(before, model.get_weights()))


def test_layer_without_masking_support_warns_and_drops_the_mask():
    inputs = hiapi.Input((4,), dtype="int64")
    x = layers.Embedding(10, 3, mask_zero=True)(inputs)
    with pytest.warns(UserWarning, match="does not support masking"):
        flat = layers.Flatten()(x)
    assert flat._keras_mask is None


def test_custom_layer_compute_mask_and_mask_argument():
    seen = {}

    class Halve(layers.Layer):
        def call(self, inputs, mask=None):
            seen["mask"] = mask
            return inputs * 0.5

        def compute_mask(self, inputs, previous_mask=None):
            seen["computed"] = hiapi.graph.ops.greater(hiapi.graph.ops.sum(inputs, -1), 0.0)
            return seen["computed"]

    inputs = hiapi.Input((4,), dtype="int64")
    x = layers.Embedding(10, 3, mask_zero=True)(inputs)
    halved = Halve()(x)
    assert Halve().supports_masking
    assert seen["mask"] is x._keras_mask
    assert halved._keras_mask is seen["computed"]
    assert not layers.Flatten().supports_masking
    passing = layers.Flatten()
    passing.supports_masking = True
    assert passing.supports_masking


def test_dot_ends_the_mask_quietly():
    inputs = hiapi.Input((4,), dtype="int64")
    x = layers.Embedding(9, 3, mask_zero=True)(inputs)
    assert layers.Dot(axes=(2, 2))([x, x])._keras_mask is None      # no warning either


def test_merge_layers_combine_masks():
    ids_in, x_in = hiapi.Input((4,), dtype="int64"), hiapi.Input((4, 3))
    embedded = layers.Embedding(9, 3, mask_zero=True)(ids_in)
    masked = layers.Masking(0.5)(x_in)
    added = layers.Add()([embedded, masked])
    features = layers.Concatenate()([embedded, masked])
    steps = layers.Concatenate(axis=1)([embedded, layers.Dense(3)(x_in)])
    masks = hiapi.graph.Function([ids_in, x_in], [added._keras_mask, features._keras_mask,
                                                  steps._keras_mask])
    ids = np.array([[1, 2, 0, 0]])
    x = np.zeros((1, 4, 3), np.float32)
    x[0, 0] = 0.5                                     # steps 0 and 3 of x are padding
    x[0, 1:3] = 1.0
    x[0, 3] = 0.5
    either, joined, concatenated = masks(ids, x)      # Keras 3: the OR of the masks
    np.testing.assert_array_equal(either, [[True, True, True, False]])
    np.testing.assert_array_equal(joined, either)
    np.testing.assert_array_equal(concatenated, [[True, True, False, False] + [True] * 4])
    assert layers.Add()([embedded, layers.Dense(3)(x_in)])._keras_mask is None


def test_layers_that_pass_masks_as_keras():
    inputs = hiapi.Input((4,), dtype="int64")
    x = layers.Embedding(9, 4, mask_zero=True)(inputs)
    for layer in [layers.Dense(4), layers.Dropout(0.2), layers.Activation("relu"),
                  layers.LayerNormalization(), layers.Identity(), layers.GaussianNoise(0.1),
                  layers.GaussianDropout(0.1), layers.GroupNormalization(2),
                  layers.SpatialDropout1D(0.1), layers.TimeDistributed(layers.Dense(4)),
                  layers.BatchNormalization(), layers.Rescaling(2.0),
                  layers.Normalization(mean=0.0, variance=1.0)]:
        y = layer(x)
        assert y._keras_mask is x._keras_mask, type(layer).__name__


def test_masking_layer_trains_a_recurrent_model():
    hiapi.utils.set_random_seed(4)
    x = RNG.normal(size=(32, 6, 2)).astype(np.float32)
    lengths = RNG.integers(2, 7, 32)
    for i, n in enumerate(lengths):
        x[i, n:] = 0.0
    y = np.array([x[i, :n].sum() for i, n in enumerate(lengths)], np.float32)[:, None]
    model = hiapi.Sequential([hiapi.Input((6, 2)), layers.Masking(),
                              layers.SimpleRNN(8), layers.Dense(1)])
    model.compile("adam", "mse")
    before = model.evaluate(x, y, verbose=0)
    model.fit(x, y, epochs=10, batch_size=8, verbose=0)
    assert model.evaluate(x, y, verbose=0) < 0.9 * before


def test_batch_normalization_statistics_over_real_steps():
    x = RNG.normal(size=(3, 5, 4)).astype(np.float32)
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [0, 1, 1, 0, 0]], bool)
    layer = layers.BatchNormalization(momentum=0.0)
    y = layer(x, training=True, mask=mask)
    real = x[mask]
    mean, variance = real.mean(0), real.var(0)
    np.testing.assert_allclose(y, (x - mean) / np.sqrt(variance + 1e-3), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(layer.moving_mean.numpy(), mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(layer.moving_variance.numpy(), variance, rtol=1e-4, atol=1e-6)
    inputs = hiapi.Input((5,), dtype="int64")
    embedded = layers.Embedding(9, 4, mask_zero=True)(inputs)
    assert layers.BatchNormalization()(embedded)._keras_mask is embedded._keras_mask
    with pytest.raises(ValueError, match="one axis less"):
        layers.BatchNormalization()(x, mask=np.ones((3, 5, 4), bool))


def test_a_loaded_model_masks_as_the_saved_one(tmp_path):
    model = hiapi.Sequential([hiapi.Input((5,), dtype="int64"),
                              layers.Embedding(10, 3, mask_zero=True),
                              layers.Bidirectional(layers.GRU(4, return_sequences=True)),
                              layers.GlobalAveragePooling1D()])
    model.save(tmp_path / "masked.hiapi")
    loaded = hiapi.models.load_model(tmp_path / "masked.hiapi")
    assert loaded.layers[0].get_config()["mask_zero"] is True
    np.testing.assert_allclose(loaded.predict(IDS, verbose=0), model.predict(IDS, verbose=0),
                               rtol=1e-6)
    short = hiapi.Input((3,), dtype="int64")          # the loaded layers on row 0 unpadded
    x = short
    for layer in loaded.layers:
        x = layer(x)
    alone = hiapi.Model(short, x).predict(IDS[:1, :3], verbose=0)
    np.testing.assert_allclose(loaded.predict(IDS, verbose=0)[0], alone[0], rtol=1e-5,
                               atol=1e-6)
