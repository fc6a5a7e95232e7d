"""TimeDistributed and Bidirectional: forward maths against plain numpy, Keras's weights and
parameter counts, config round trips (wrapped layers included), masks, a training step."""
import numpy as np
import pytest

from check_op import check_op

import hiapi
from hiapi import layers
from hiapi.layers.bidirectional import reverse_time

RNG = np.random.default_rng(11)


def randn(*shape):
    return RNG.normal(size=shape).astype(np.float32)


def simple_rnn(x, kernel, recurrent, bias, backwards=False):
    """All hidden states of tanh(x_t W + h U + b), in processing order."""
    h, states = np.zeros((x.shape[0], kernel.shape[1]), np.float32), []
    steps = range(x.shape[1] - 1, -1, -1) if backwards else range(x.shape[1])
    for t in steps:
        h = np.tanh(x[:, t] @ kernel + h @ recurrent + bias)
        states.append(h)
    return np.stack(states, 1)


# ---- TimeDistributed -----------------------------------------------------------------------
def test_time_distributed_dense_is_dense_per_step():
    x = randn(3, 5, 4)
    layer = layers.TimeDistributed(layers.Dense(6, activation="tanh"))
    y = layer(x)
    kernel, bias = layer.get_weights()
    assert kernel.shape == (4, 6) and layer.count_params() == 30
    np.testing.assert_allclose(y, np.tanh(x @ kernel + bias), rtol=1e-5, atol=1e-6)


def test_time_distributed_conv_per_frame():
    frames = randn(2, 3, 6, 6, 1)
    layer = layers.TimeDistributed(layers.Conv2D(4, 3))
    y = layer(frames)
    assert y.shape == (2, 3, 4, 4, 4)
    per_frame = np.stack([layer.layer(frames[:, t]) for t in range(3)], 1)
    np.testing.assert_allclose(y, per_frame, rtol=1e-5, atol=1e-6)


def test_time_distributed_config_round_trip_and_errors():
    layer = layers.TimeDistributed(layers.Dense(3, activation="relu", name="inner"), name="td")
    config = layer.get_config()
    assert config["layer"]["class_name"] == "Dense"
    assert config["layer"]["config"]["units"] == 3
    clone = layers.TimeDistributed.from_config(config)
    assert clone.name == "td" and clone.layer.units == 3 and clone.layer.name == "inner"
    with pytest.raises(ValueError, match="at least 3 axes"):
        layers.TimeDistributed(layers.Dense(2))(randn(2, 3))
    with pytest.raises(ValueError, match="must be a Layer"):
        layers.TimeDistributed("dense")


def test_time_distributed_trains_and_keeps_the_mask():
    inputs = hiapi.Input((5,), dtype="int64")
    x = layers.Embedding(10, 4, mask_zero=True)(inputs)
    x = layers.TimeDistributed(layers.Dense(4))(x)
    assert x._keras_mask is not None
    x = layers.LSTM(3)(x)
    model = hiapi.Model(inputs, layers.Dense(1)(x))
    model.compile("adam", "mse")
    ids = np.array([[1, 2, 0, 0, 0], [3, 4, 5, 6, 7]])
    target = np.array([[1.0], [-1.0]])
    before = model.evaluate(ids, target, verbose=0)
    model.fit(ids, target, epochs=5, verbose=0)
    assert model.evaluate(ids, target, verbose=0) < before


# ---- Bidirectional -------------------------------------------------------------------------
def test_bidirectional_concat_sequences_against_numpy():
    x = randn(2, 5, 3)
    layer = layers.Bidirectional(layers.SimpleRNN(4, return_sequences=True,
                                                  bias_initializer="random_normal"))
    y = layer(x)
    fk, fr, fb, bk, br, bb = layer.get_weights()
    forward = simple_rnn(x, fk, fr, fb)
    backward = simple_rnn(x, bk, br, bb, backwards=True)[:, ::-1]     # back in time order
    np.testing.assert_allclose(y, np.concatenate([forward, backward], -1), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("mode, merge", [("sum", np.add), ("mul", np.multiply),
                                         ("ave", lambda a, b: (a + b) / 2),
                                         ("concat", lambda a, b: np.concatenate([a, b], -1))])
def test_bidirectional_merge_modes(mode, merge):
    x = randn(2, 4, 3)
    split = layers.Bidirectional(layers.GRU(3), merge_mode=None)
    forward, backward = split(x)
    merged = layers.Bidirectional(layers.GRU(3), merge_mode=mode)
    merged(x)
    merged.set_weights(split.get_weights())
    np.testing.assert_allclose(merged(x), merge(forward, backward), rtol=1e-5, atol=1e-6)


def test_bidirectional_last_output_and_states():
    x = randn(2, 5, 3)
    layer = layers.Bidirectional(layers.LSTM(4, return_state=True))
    output, fh, fc, bh, bc = layer(x)
    assert output.shape == (2, 8) and fc.shape == bc.shape == (2, 4)
    np.testing.assert_allclose(output, np.concatenate([fh, bh], -1), rtol=1e-6)
    forward_alone = layer.forward_layer(x)           # the same copies, run on their own
    backward_alone = layer.backward_layer(x)
    np.testing.assert_allclose(fh, forward_alone[1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(bh, backward_alone[1], rtol=1e-5, atol=1e-6)


def test_bidirectional_weights_as_keras():
    layer = layers.Bidirectional(layers.LSTM(8, name="lstm"), name="bidi")
    layer(randn(2, 5, 3))
    assert [w.name for w in layer.weights] == [
        "forward_lstm/kernel", "forward_lstm/recurrent_kernel", "forward_lstm/bias",
        "backward_lstm/kernel", "backward_lstm/recurrent_kernel", "backward_lstm/bias"]
    lstm = 4 * (8 * (3 + 8) + 8)                     # Keras: 4 * (units * (in + units) + units)
    assert layer.count_params() == 2 * lstm
    assert layer.backward_layer.go_backwards and not layer.forward_layer.go_backwards


def test_bidirectional_config_round_trip():
    backward = layers.GRU(3, go_backwards=True, return_sequences=True, name="mine")
    layer = layers.Bidirectional(layers.GRU(3, return_sequences=True), merge_mode="ave",
                                 backward_layer=backward)
    config = layer.get_config()
    assert config["merge_mode"] == "ave"
    assert config["layer"]["config"]["name"].startswith("forward_")
    assert config["backward_layer"]["config"]["name"] == "mine"
    clone = layers.Bidirectional.from_config(config)
    assert clone.forward_layer.name == config["layer"]["config"]["name"]
    assert clone.backward_layer.name == "mine" and clone.merge_mode == "ave"
    x = randn(2, 4, 2)
    layer(x)
    clone(x)
    clone.set_weights(layer.get_weights())
    np.testing.assert_allclose(clone(x), layer(x), rtol=1e-6)


def test_bidirectional_errors():
    with pytest.raises(ValueError, match="recurrent layer"):
        layers.Bidirectional(layers.Dense(3))
    with pytest.raises(ValueError, match="merge_mode"):
        layers.Bidirectional(layers.LSTM(3), merge_mode="max")
    with pytest.raises(ValueError, match="different go_backwards"):
        layers.Bidirectional(layers.LSTM(3), backward_layer=layers.LSTM(3))
    with pytest.raises(ValueError, match="return_sequences"):
        layers.Bidirectional(layers.LSTM(3), backward_layer=layers.LSTM(
            3, go_backwards=True, return_sequences=True))


@pytest.mark.parametrize("return_sequences", [False, True])
def test_bidirectional_padded_batch_matches_each_sequence(return_sequences):
    ids = np.array([[4, 2, 7, 0, 0], [1, 2, 3, 4, 5], [9, 0, 0, 0, 0]])
    lengths = [3, 5, 1]
    embed = layers.Embedding(10, 3, mask_zero=True)
    bidi = layers.Bidirectional(layers.LSTM(4, return_sequences=return_sequences))

    def run(batch):
        inputs = hiapi.Input((batch.shape[1],), dtype="int64")
        out = bidi(embed(inputs))
        assert (out._keras_mask is not None) == return_sequences
        return hiapi.Model(inputs, out).predict(batch, verbose=0)
    padded = run(ids)
    for i, n in enumerate(lengths):
        alone = run(ids[i:i + 1, :n])[0]
        got = padded[i, :n] if return_sequences else padded[i]
        np.testing.assert_allclose(got, alone, rtol=1e-5, atol=1e-6)
        if return_sequences:     # Keras sets zero_output_for_mask on both directions
            np.testing.assert_array_equal(padded[i, n:], 0.0)


def test_bidirectional_trains_and_saves(tmp_path):
    hiapi.utils.set_random_seed(5)
    model = hiapi.Sequential([hiapi.Input((6, 2)),
                              layers.Bidirectional(layers.SimpleRNN(4, return_sequences=True)),
                              layers.TimeDistributed(layers.Dense(1))])
    model.compile("adam", "mse")
    x, y = randn(16, 6, 2), randn(16, 6, 1)
    before = model.evaluate(x, y, verbose=0)
    model.fit(x, y, epochs=5, verbose=0)
    assert model.evaluate(x, y, verbose=0) < before
    model.save(tmp_path / "bidi.hiapi")
    loaded = hiapi.models.load_model(tmp_path / "bidi.hiapi")
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0),
                               rtol=1e-6)


def test_reverse_time_gradient():
    x = np.linspace(-1, 1, 24).reshape(2, 4, 3)
    check_op(reverse_time, [x], lambda a: a[:, ::-1], batch=True)


def test_masked_bidirectional_gradient():
    from hiapi.graph import ops
    x = np.linspace(-1, 1, 30).reshape(2, 5, 3)
    mask = ops.constant(np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool))
    layer = layers.Bidirectional(layers.LSTM(3, return_sequences=True))
    check_op(lambda a: layer(a, mask=mask), [x], atol=1e-5, rtol=1e-4)


def test_time_distributed_passes_each_steps_mask_to_the_wrapped_layer():
    # documents of 2 sentences of 4 words; sentence-level LSTM over its own words
    ids = np.array([[[3, 1, 0, 0], [2, 2, 2, 5]], [[4, 0, 0, 0], [7, 6, 0, 0]]])
    embed = layers.Embedding(9, 3, mask_zero=True)
    words = layers.TimeDistributed(layers.LSTM(4))
    inputs = hiapi.Input((2, 4), dtype="int64")
    padded = hiapi.Model(inputs, words(embed(inputs))).predict(ids, verbose=0)
    lengths = (ids != 0).sum(-1)
    for d in range(2):
        for s in range(2):
            alone = words.layer(embed(ids[d:d + 1, s, :lengths[d, s]]))
            np.testing.assert_allclose(padded[d, s], alone[0], rtol=1e-5, atol=1e-6)
    sentences = words(embed(inputs))
    real = hiapi.graph.Function([inputs], [sentences._keras_mask])(
        np.array([[[3, 0, 0, 0], [0, 0, 0, 0]]]))[0]
    np.testing.assert_array_equal(real, [[True, False]])      # a sentence with any word
    sequences = layers.TimeDistributed(layers.LSTM(2, return_sequences=True))(embed(inputs))
    assert sequences._keras_mask.shape == (None, 2, 4)         # the LSTM's own mask, unfolded
