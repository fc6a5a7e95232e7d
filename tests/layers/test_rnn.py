"""Keras's recurrent API around the loop: ``RNN(cell)`` and the cells, ``initial_state``,
``stateful``/``reset_states``, dropout, nested cell inputs and sequences of unknown length."""
import numpy as np
import pytest

import hiapi
from hiapi import layers


def randn(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


@pytest.mark.parametrize("layer_cls, cell_cls", [
    (layers.SimpleRNN, layers.SimpleRNNCell), (layers.LSTM, layers.LSTMCell),
    (layers.GRU, layers.GRUCell)])
@pytest.mark.parametrize("go_backwards", [False, True])
def test_rnn_over_a_cell_matches_the_layer(layer_cls, cell_cls, go_backwards):
    x = randn(3, 5, 4)
    layer = layer_cls(6, return_sequences=True, return_state=True, go_backwards=go_backwards)
    expected = layer(x)
    rnn = layers.RNN(cell_cls(6), return_sequences=True, return_state=True,
                     go_backwards=go_backwards)
    rnn(x)
    rnn.set_weights(layer.get_weights())
    for got, want in zip(rnn(x), expected):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_lstm_cell_forward_maths():
    cell = layers.LSTMCell(3)
    x, h, c = randn(2, 4), randn(2, 3, seed=1), randn(2, 3, seed=2)
    rnn = layers.RNN(cell, return_state=True)
    _, h1, c1 = rnn(x[:, None], initial_state=[h, c])
    k, u, b = cell.get_weights()
    i, f, g, o = np.split(x @ k + h @ u + b, 4, -1)
    sig = lambda v: 1 / (1 + np.exp(-v))
    c_want = sig(f) * c + sig(i) * np.tanh(g)
    np.testing.assert_allclose(c1, c_want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h1, sig(o) * np.tanh(c_want), rtol=1e-5, atol=1e-6)
    assert cell.state_size == [3, 3] and cell.output_size == 3


def test_initial_state_eager_and_in_a_functional_model():
    x, h0 = randn(2, 4, 3), randn(2, 5, seed=1)
    rnn = layers.SimpleRNN(5)
    out = rnn(x, initial_state=[h0])
    k, u, b = rnn.get_weights()
    h = h0
    for t in range(4):
        h = np.tanh(x[:, t] @ k + h @ u + b)
    np.testing.assert_allclose(out, h, rtol=1e-5, atol=1e-6)
    # the encoder's states start the decoder, through a model that replays the call
    enc_in, dec_in = hiapi.Input((None, 3)), hiapi.Input((None, 3))
    _, state_h, state_c = layers.LSTM(5, return_state=True)(enc_in)
    decoder = layers.LSTM(5)
    model = hiapi.Model([enc_in, dec_in], decoder(dec_in, initial_state=[state_h, state_c]))
    encoder = model.layers[2] if isinstance(model.layers[2], layers.LSTM) else model.layers[3]
    assert model.outputs[0].shape == (None, 5)
    y, z = randn(2, 6, 3, seed=2), randn(2, 4, 3, seed=3)
    got = model.predict([y, z], verbose=0)
    _, eh, ec = [np.asarray(v) for v in encoder(y)]
    np.testing.assert_allclose(got, decoder(z, initial_state=[eh, ec]), rtol=1e-5, atol=1e-6)


def test_stateful_carries_states_between_calls_until_reset():
    x1, x2 = randn(2, 3, 4), randn(2, 3, 4, seed=1)
    layer = layers.LSTM(5, stateful=True)
    assert layer.states is None
    layer(x1)
    second = layer(x2)
    whole = layers.LSTM(5)
    whole(x1)
    whole.set_weights(layer.get_weights())
    np.testing.assert_allclose(second, whole(np.concatenate([x1, x2], 1)), rtol=1e-5,
                               atol=1e-6)
    assert len(layer.states) == 2 and layer.states[0].shape == (2, 5)
    np.testing.assert_allclose(layer.states[0].numpy(), second, rtol=1e-6)
    # reused as another layer's initial state (Keras's "RNN state reuse")
    reuse = layers.LSTM(5)
    reuse(x1)
    reuse.set_weights(layer.get_weights())
    np.testing.assert_allclose(reuse(x2, initial_state=layer.states),
                               whole(np.concatenate([x1, x2, x2], 1)), rtol=1e-5, atol=1e-6)
    layer.reset_states()
    assert not layer.states[0].numpy().any()
    np.testing.assert_allclose(layer(x1), whole(x1), rtol=1e-5, atol=1e-6)
    assert len(layer.weights) == 3          # the states are not weights


def test_stateful_needs_a_known_batch():
    with pytest.raises(ValueError, match="stateful=True needs a known batch size"):
        layers.GRU(2, stateful=True)(hiapi.Input((3, 4)))


def test_dropout_masks_are_one_per_sequence_and_only_in_training():
    x = np.repeat(randn(4, 1, 6), 5, axis=1)          # every step the same input
    layer = layers.SimpleRNN(8, dropout=0.5, recurrent_initializer="zeros", seed=3,
                             return_sequences=True)
    plain = layers.SimpleRNN(8, return_sequences=True)
    inference = layer(x)
    plain(x)
    plain.set_weights(layer.get_weights())
    np.testing.assert_allclose(inference, plain(x), rtol=1e-6)
    trained = np.asarray(layer(x, training=True))
    assert not np.allclose(trained, inference)
    for t in range(1, 5):                               # the same mask at every step
        np.testing.assert_allclose(trained[:, t], trained[:, 0], rtol=1e-6)
    assert layer.get_config()["dropout"] == 0.5


def test_recurrent_dropout_trains():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(32, 6, 3)).astype(np.float32), rng.normal(size=(32, 1))
    model = hiapi.Sequential([hiapi.Input((6, 3)),
                              layers.GRU(4, dropout=0.2, recurrent_dropout=0.3, seed=1),
                              layers.Dense(1)])
    model.compile("adam", "mse")
    history = model.fit(x, y, epochs=3, verbose=0)
    assert np.isfinite(history.history["loss"]).all()


def test_unknown_length_model_runs_on_each_length():
    inputs = hiapi.Input((None, 3))
    outputs = layers.Dense(2)(layers.GRU(4)(inputs))
    model = hiapi.Model(inputs, outputs)
    gru, dense = model.layers[1], model.layers[2]
    for steps in (4, 7):
        x = randn(2, steps, 3, seed=steps)
        np.testing.assert_allclose(model.predict(x, verbose=0), dense(gru(x)), rtol=1e-5,
                                   atol=1e-6)
    model.compile("sgd", "mse")
    model.fit(randn(8, 5, 3), randn(8, 2), epochs=1, verbose=0)


class PairCell(layers.Layer):
    """A cell with two inputs and two states of different shapes."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.state_size = [(2,), (3, 4)]
        self.output_size = [(2,), (3, 4)]

    def build(self, input_shapes):
        self.k1 = self.add_weight((input_shapes[0][1], 2), "ones")

    def call(self, inputs, states):
        a, b = hiapi.tree.flatten(inputs)
        s1, s2 = states
        s1, s2 = s1 + hiapi.ops.matmul(a, self.k1), s2 + b
        return (s1, s2), (s1, s2)


def test_rnn_with_nested_inputs_states_and_outputs():
    a, b = randn(2, 5, 3), randn(2, 5, 3, 4, seed=1)
    out1, out2 = layers.RNN(PairCell())((a, b))
    np.testing.assert_allclose(out1, a.sum(1) @ np.ones((3, 2)), rtol=1e-5)
    np.testing.assert_allclose(out2, b.sum(1), rtol=1e-5)
    in_a, in_b = hiapi.Input((None, 3)), hiapi.Input((None, 3, 4))
    model = hiapi.Model([in_a, in_b], layers.RNN(PairCell())((in_a, in_b)))
    assert [o.shape for o in model.outputs] == [(None, 2), (None, 3, 4)]
    model.compile("adam", "mse")
    model.fit([a, b], [np.zeros((2, 2)), np.zeros((2, 3, 4))], verbose=0)


def test_rnn_config_round_trip():
    rnn = layers.RNN(layers.GRUCell(3, reset_after=False), return_sequences=True,
                     stateful=False, unroll=True)
    copy = layers.RNN.from_config(rnn.get_config())
    assert copy.return_sequences and copy.unroll and isinstance(copy.cell, layers.GRUCell)
    assert copy.cell.reset_after is False
    lstm = layers.LSTM(3, dropout=0.1, recurrent_dropout=0.2, stateful=True, unroll=True)
    config = lstm.get_config()
    assert {k: config[k] for k in ("dropout", "recurrent_dropout", "stateful", "unroll",
                                   "seed")} == {"dropout": 0.1, "recurrent_dropout": 0.2,
                                                "stateful": True, "unroll": True, "seed": None}
    assert layers.LSTM.from_config(config).get_config() == config


def test_stacked_cells_equal_stacked_layers():
    x = randn(3, 4, 5)
    first, second = layers.LSTM(6, return_sequences=True, return_state=True), \
        layers.GRU(2, return_state=True)
    seq, h1, c1 = first(x)
    out, h2 = second(seq)
    rnn = layers.RNN([layers.LSTMCell(6), layers.GRUCell(2)], return_state=True)
    assert isinstance(rnn.cell, layers.StackedRNNCells)
    rnn(x)
    rnn.set_weights(first.get_weights() + second.get_weights())
    got = rnn(x)            # Keras: the states nested per cell
    assert len(got) == 3 and rnn.cell.state_size == [[6, 6], 2]
    for g, want in zip([got[0], *got[1], *got[2]], [out, h1, c1, h2]):
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6)
    x2 = randn(3, 2, 5, seed=1)
    again = rnn(x2, initial_state=got[1:])          # nested initial states, as returned
    seq2 = first(x2, initial_state=[h1, c1])[0]
    np.testing.assert_allclose(again[0], second(seq2, initial_state=[h2])[0], rtol=1e-5,
                               atol=1e-6)
    symbolic = layers.RNN([layers.LSTMCell(6), layers.GRUCell(2)], return_state=True)(
        hiapi.Input((None, 5)))
    assert [v.shape for v in hiapi.tree.flatten(symbolic)] == [(None, 2), (None, 6),
                                                               (None, 6), (None, 2)]
    copy = layers.RNN.from_config(rnn.get_config())
    assert [type(c).__name__ for c in copy.cell.cells] == ["LSTMCell", "GRUCell"]


def test_bidirectional_initial_state_and_stateful():
    x, states = randn(2, 4, 3), [randn(2, 5, seed=k) for k in range(4)]
    bi = layers.Bidirectional(layers.LSTM(5))
    got = bi(x, initial_state=states)
    fw, bw = bi.forward_layer, bi.backward_layer
    want = np.concatenate([fw(x, initial_state=states[:2]), bw(x, initial_state=states[2:])], -1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    stateful = layers.Bidirectional(layers.GRU(3, stateful=True))
    assert stateful.stateful and stateful.states is None
    stateful(x)
    assert len(stateful.states) == 2 and stateful.states[0].numpy().any()
    stateful.reset_states()
    assert not any(v.numpy().any() for v in stateful.states)


def test_keras_implementation_and_cudnn_arguments_are_accepted():
    x = randn(2, 3, 4)
    plain = layers.LSTM(3)
    want = plain(x)
    other = layers.LSTM(3, use_cudnn=False, implementation=1)
    other(x)
    other.set_weights(plain.get_weights())
    np.testing.assert_allclose(other(x), want, rtol=1e-6)
    layers.GRUCell(2, implementation=1)
    with pytest.raises(ValueError, match="use_cudnn must be 'auto', True or False, got 'yes'"):
        layers.GRU(2, use_cudnn="yes")
    with pytest.raises(ValueError, match="implementation must be 1 or 2, got 3"):
        layers.SimpleRNN(2, implementation=3)
    with pytest.raises(TypeError, match="use_cudnn"):
        layers.SimpleRNN(2, use_cudnn=True)            # as Keras: SimpleRNN has no cuDNN path


def test_open_axes_stay_open_for_models_that_do_not_need_their_size():
    """Only a model whose layers need a length is traced per length: a convolutional model on
    images of any size still trains on batches of different sizes with one step function."""
    inputs = hiapi.Input((None, None, 2))
    model = hiapi.Model(inputs, layers.GlobalAveragePooling2D()(layers.Conv2D(3, 3)(inputs)))
    model.compile("sgd", "mse")

    def batches():
        for size in (6, 9, 6, 9):
            yield randn(2, size, size, 2, seed=size), np.zeros((2, 3), np.float32)
    model.fit(batches(), epochs=1, verbose=0)
    assert not getattr(model, "_steps_by_length", False)
    rnn_in = hiapi.Input((None, 2))
    recurrent = hiapi.Model(rnn_in, layers.SimpleRNN(3)(rnn_in))
    for steps in (3, 5):
        assert recurrent.predict(randn(2, steps, 2), verbose=0).shape == (2, 3)
    assert recurrent._steps_by_length
    assert len(recurrent._step_functions) == 2


def test_bidirectional_over_an_rnn_of_a_cell_returns_its_states():
    out = layers.Bidirectional(layers.RNN(layers.LSTMCell(4), return_state=True))(
        hiapi.Input((5, 3)))
    assert [tuple(o.shape) for o in out] == [(None, 8)] + [(None, 4)] * 4
