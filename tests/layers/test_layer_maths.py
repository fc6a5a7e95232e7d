"""Forward maths of every layer against an independent numpy reference (plain loops here and
in tests/graph/numpy_references.py),
including the tricky cases: 'same' padding with even kernels and strides, dilation, groups,
channels_first, batch norm in inference, recurrent gate order."""
import numpy as np
import pytest

import numpy_references

import hiapi
from hiapi import layers

RNG = np.random.default_rng(42)


def randn(*shape):
    return RNG.normal(size=shape).astype(np.float32)


def reference_conv2d(x, w, b, strides, padding, dilation, groups=1):
    return numpy_references.conv2d(x, w, strides, padding, dilation, groups) + b


@pytest.mark.parametrize("size, kernel, strides, padding, dilation, groups", [
    ((7, 8), (3, 3), (1, 1), "valid", (1, 1), 1),
    ((8, 8), (2, 2), (2, 2), "same", (1, 1), 1),       # even kernel, stride 2, same
    ((7, 9), (4, 3), (3, 2), "same", (1, 1), 1),       # odd extra padding goes bottom/right
    ((9, 9), (3, 3), (1, 1), "same", (2, 2), 1),       # dilation
    ((6, 6), (3, 3), (1, 1), "valid", (1, 1), 2),      # groups
])
def test_conv2d(size, kernel, strides, padding, dilation, groups):
    x = randn(2, *size, 4)
    layer = layers.Conv2D(6, kernel, strides=strides, padding=padding, dilation_rate=dilation,
                          groups=groups, bias_initializer="random_normal")
    y = layer(x)
    w, b = layer.get_weights()
    assert w.shape == kernel + (4 // groups, 6)
    np.testing.assert_allclose(y, reference_conv2d(x, w, b, strides, padding, dilation, groups),
                               rtol=1e-4, atol=1e-4)


def test_conv2d_channels_first_matches_channels_last():
    x = randn(2, 3, 6, 5)                        # NCHW
    first = layers.Conv2D(4, 3, padding="same", data_format="channels_first")
    y = first(x)
    w, b = first.get_weights()
    expected = reference_conv2d(x.transpose(0, 2, 3, 1), w, b, (1, 1), "same", (1, 1))
    np.testing.assert_allclose(y, expected.transpose(0, 3, 1, 2), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("padding, strides, dilation", [("valid", 1, 1), ("same", 2, 1),
                                                        ("same", 1, 2)])
def test_conv1d(padding, strides, dilation):
    x = randn(3, 10, 4)
    layer = layers.Conv1D(5, 3, strides=strides, padding=padding, dilation_rate=dilation)
    y = layer(x)
    w, b = layer.get_weights()
    expected = reference_conv2d(x[:, None], w[None], b, (1, strides), padding, (1, dilation))
    np.testing.assert_allclose(y, expected[:, 0], rtol=1e-4, atol=1e-4)


reference_pool = numpy_references.pool2d


@pytest.mark.parametrize("cls, kind", [(layers.MaxPooling2D, "max"),
                                       (layers.AveragePooling2D, "avg")])
@pytest.mark.parametrize("size, pool, strides, padding", [
    ((6, 6), (2, 2), None, "valid"), ((7, 5), (2, 2), None, "same"),
    ((7, 7), (3, 3), (2, 2), "same"), ((8, 6), (3, 2), (1, 2), "valid")])
def test_pooling_2d(cls, kind, size, pool, strides, padding):
    x = randn(2, *size, 3)
    y = cls(pool, strides, padding)(x)
    np.testing.assert_allclose(y, reference_pool(x, pool, strides or pool, padding, kind),
                               rtol=1e-5, atol=1e-6)


def test_pooling_1d_and_global_pooling():
    x = randn(2, 9, 3)
    np.testing.assert_allclose(layers.MaxPooling1D(2)(x),
                               reference_pool(x[:, None], (1, 2), (1, 2), "valid", "max")[:, 0])
    np.testing.assert_allclose(layers.AveragePooling1D(3, padding="same")(x),
                               reference_pool(x[:, None], (1, 3), (1, 3), "same", "avg")[:, 0],
                               rtol=1e-6)
    images = randn(2, 4, 5, 3)
    np.testing.assert_allclose(layers.GlobalAveragePooling2D()(images), images.mean((1, 2)),
                               rtol=1e-6)
    np.testing.assert_allclose(layers.GlobalMaxPooling2D()(images), images.max((1, 2)))
    np.testing.assert_allclose(layers.GlobalAveragePooling1D()(x), x.mean(1), rtol=1e-6)
    np.testing.assert_allclose(
        layers.GlobalAveragePooling2D(data_format="channels_first", keepdims=True)(images),
        images.mean((2, 3), keepdims=True), rtol=1e-6)


def test_batch_normalization_training_and_inference():
    x = randn(16, 4, 3) * 3 + 1
    bn = layers.BatchNormalization(momentum=0.9, gamma_initializer="random_normal",
                                   beta_initializer="random_normal")
    inference = bn(x)                            # moving stats: mean 0, variance 1
    gamma, beta, moving_mean, moving_var = bn.get_weights()
    np.testing.assert_allclose(inference, x / np.sqrt(1 + 1e-3) * gamma + beta, rtol=1e-5,
                               atol=1e-7)          # float32: values near 0 need an atol
    training = bn(x, training=True)
    mean, var = x.mean((0, 1)), x.var((0, 1))
    np.testing.assert_allclose(training, (x - mean) / np.sqrt(var + 1e-3) * gamma + beta,
                               rtol=1e-4, atol=1e-5)
    _, _, moving_mean, moving_var = bn.get_weights()      # updated by the training call
    np.testing.assert_allclose(moving_mean, 0.1 * mean, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(moving_var, 0.9 + 0.1 * var, rtol=1e-4)
    np.testing.assert_allclose(bn(x), (x - moving_mean) / np.sqrt(moving_var + 1e-3) * gamma
                               + beta, rtol=1e-4, atol=1e-5)
    assert [w.shape for w in bn.get_weights()] == [(3,)] * 4
    assert len(bn.trainable_weights) == 2


def test_batch_normalization_channels_first_axis():
    x = randn(8, 3, 4, 4)
    y = layers.BatchNormalization(axis=1)(x, training=True)
    mean, var = x.mean((0, 2, 3), keepdims=True), x.var((0, 2, 3), keepdims=True)
    np.testing.assert_allclose(y, (x - mean) / np.sqrt(var + 1e-3), rtol=1e-4, atol=1e-5)


def test_layer_normalization():
    x = randn(4, 5, 6)
    ln = layers.LayerNormalization(gamma_initializer="random_normal")
    y = ln(x)
    gamma, beta = ln.get_weights()
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    np.testing.assert_allclose(y, (x - mean) / np.sqrt(var + 1e-3) * gamma + beta, rtol=1e-4,
                               atol=1e-5)


def test_dropout_scales_kept_values_and_is_identity_in_inference():
    x = np.ones((200, 50), np.float32)
    drop = layers.Dropout(0.3, seed=7)
    np.testing.assert_array_equal(drop(x), x)
    first, second = drop(x, training=True), drop(x, training=True)
    assert set(np.unique(first)) <= {0.0, np.float32(1 / 0.7)}
    assert abs((first == 0).mean() - 0.3) < 0.02
    assert not np.array_equal(first, second)              # a new mask each step
    again = layers.Dropout(0.3, seed=7)
    np.testing.assert_array_equal(again(x, training=True), first)   # reproducible per seed
    shared = layers.Dropout(0.5, noise_shape=(None, 1), seed=1)(x, training=True)
    assert all(len(set(row)) == 1 for row in shared)


def test_reshaping_layers():
    x = randn(2, 3, 4, 2)
    np.testing.assert_array_equal(layers.Reshape((4, 6))(x), x.reshape(2, 4, 6))
    np.testing.assert_array_equal(layers.Reshape((-1, 2))(x), x.reshape(2, 12, 2))
    np.testing.assert_array_equal(layers.Permute((3, 1, 2))(x), x.transpose(0, 3, 1, 2))
    np.testing.assert_array_equal(layers.ZeroPadding2D(((1, 2), (0, 1)))(x),
                                  np.pad(x, ((0, 0), (1, 2), (0, 1), (0, 0))))
    np.testing.assert_array_equal(layers.UpSampling2D((2, 3))(x),
                                  x.repeat(2, axis=1).repeat(3, axis=2))
    with pytest.raises(ValueError, match=r"Reshape .* cannot reshape input of shape"):
        layers.Reshape((5, 5))(x)


def test_embedding_lookup():
    emb = layers.Embedding(10, 3)
    ids = np.array([[1, 4, 4], [9, 0, 1]])
    y = emb(ids)
    (table,) = emb.get_weights()
    np.testing.assert_array_equal(y, table[ids])
    assert layers.Embedding(10, 3, mask_zero=True).get_config()["mask_zero"] is True


def test_merge_layers():
    a, b, c = randn(3, 4), randn(3, 4), randn(3, 2)
    np.testing.assert_allclose(layers.Add()([a, b]), a + b)
    np.testing.assert_allclose(layers.Subtract()([a, b]), a - b)
    np.testing.assert_allclose(layers.Multiply()([a, b]), a * b)
    np.testing.assert_allclose(layers.Average()([a, b]), (a + b) / 2, rtol=1e-6)
    np.testing.assert_allclose(layers.Maximum()([a, b]), np.maximum(a, b))
    np.testing.assert_allclose(layers.Concatenate()([a, c]), np.concatenate([a, c], -1))
    with pytest.raises(ValueError, match="same shape"):
        layers.Add()([a, c])


def sigmoid(v):
    return 1 / (1 + np.exp(-v))


def test_simple_rnn_sequences_and_state():
    x = randn(2, 5, 3)
    rnn = layers.SimpleRNN(4, return_sequences=True, return_state=True)
    seq, state = rnn(x)
    k, u, b = rnn.get_weights()
    h, outs = np.zeros((2, 4)), []
    for t in range(5):
        h = np.tanh(x[:, t] @ k + h @ u + b)
        outs.append(h)
    np.testing.assert_allclose(seq, np.stack(outs, 1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(state, h, rtol=1e-5, atol=1e-6)


def test_lstm_gate_order_and_go_backwards():
    x = randn(2, 6, 3)
    lstm = layers.LSTM(4, return_state=True, go_backwards=True)
    out, h_state, c_state = lstm(x)
    k, u, b = lstm.get_weights()
    assert k.shape == (3, 16) and u.shape == (4, 16)
    np.testing.assert_array_equal(b[4:8], 1.0)              # unit_forget_bias
    h, c = np.zeros((2, 4)), np.zeros((2, 4))
    for t in reversed(range(6)):
        i, f, g, o = np.split(x[:, t] @ k + h @ u + b, 4, axis=-1)
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
        h = sigmoid(o) * np.tanh(c)
    np.testing.assert_allclose(out, h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c_state, c, rtol=1e-5, atol=1e-6)


def test_gru_reset_after():
    x = randn(2, 4, 3)
    gru = layers.GRU(5, bias_initializer="random_normal")
    y = gru(x)
    k, u, b = gru.get_weights()
    assert b.shape == (2, 15)
    h = np.zeros((2, 5))
    for t in range(4):
        xz, xr, xh = np.split(x[:, t] @ k + b[0], 3, -1)
        rz, rr, rh = np.split(h @ u + b[1], 3, -1)
        z, r = sigmoid(xz + rz), sigmoid(xr + rr)
        h = z * h + (1 - z) * np.tanh(xh + r * rh)
    np.testing.assert_allclose(y, h, rtol=1e-5, atol=1e-6)


def test_rnn_on_unknown_steps_is_shaped_but_not_run():
    x = hiapi.graph.placeholder((None, None, 3))
    out = layers.LSTM(2, return_sequences=True)(x)
    assert out.shape == (None, None, 2)
    with pytest.raises(ValueError, match="unknown number of time steps"):
        hiapi.graph.Function([x], [out])(np.zeros((1, 4, 3), np.float32))


def test_gru_reset_before():
    x = randn(2, 4, 3)
    gru = layers.GRU(5, reset_after=False, bias_initializer="random_normal")
    y = gru(x)
    k, u, b = gru.get_weights()
    assert b.shape == (15,)
    h = np.zeros((2, 5))
    for t in range(4):
        xz, xr, xh = np.split(x[:, t] @ k + b, 3, -1)
        z = sigmoid(xz + h @ u[:, :5])
        r = sigmoid(xr + h @ u[:, 5:10])
        h = z * h + (1 - z) * np.tanh(xh + (r * h) @ u[:, 10:])
    np.testing.assert_allclose(y, h, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("layer, shape, message", [
    (lambda: layers.Conv2D(4, 3), (None, 28, 28), r"expected rank 4, got shape \(None, 28, 28\)"),
    (lambda: layers.MaxPooling2D(), (None, 10), r"expected rank 4"),
    (lambda: layers.LSTM(3), (None, 5), r"expected rank 3, got shape \(None, 5\)"),
])
def test_wrong_rank_names_layer_and_shape(layer, shape, message):
    instance = layer()
    with pytest.raises(ValueError, match=rf"layer '{instance.name}'.*{message}"):
        instance(hiapi.graph.placeholder(shape))


def test_conv_rejects_wrong_channel_count_after_build():
    conv = layers.Conv2D(4, 3, name="c1")
    conv(randn(1, 5, 5, 3))
    with pytest.raises(ValueError, match=r"layer 'c1'.*axis -1 to have size 3.*\(None, 5, 5, 2\)"):
        conv(hiapi.graph.placeholder((None, 5, 5, 2)))
