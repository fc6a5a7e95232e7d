"""MultiHeadAttention against a plain numpy (einsum) implementation of Keras's layer: weights
in Keras's EinsumDense layout, masks (attention, causal, carried), attention_axes, dropout,
functional models, saving, a training step."""
import numpy as np
import pytest

import hiapi
from hiapi import layers

RNG = np.random.default_rng(3)


def randn(*shape):
    return RNG.normal(size=shape).astype(np.float32)


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def reference(weights, query, value, key=None, keep=None):
    """Keras's MultiHeadAttention for (batch, T, dim) inputs, written with einsum; ``keep``
    (batch, T, S) is where attention is allowed."""
    key = value if key is None else key
    wq, bq, wk, bk, wv, bv, wo, bo = weights
    q = np.einsum("btd,dhk->bthk", query, wq) + bq
    k = np.einsum("bsd,dhk->bshk", key, wk) + bk
    v = np.einsum("bsd,dhk->bshk", value, wv) + bv
    scores = np.einsum("bthk,bshk->bhts", q / np.float32(np.sqrt(wq.shape[-1])), k)
    if keep is not None:      # as Keras, in float32: a fully masked row becomes uniform
        scores = scores + (1.0 - keep[:, None].astype(np.float32)) * np.float32(-1e9)
    probs = softmax(scores)
    attended = np.einsum("bhts,bshv->bthv", probs, v)
    return np.einsum("bthv,hvo->bto", attended, wo) + bo, probs


def test_self_and_cross_attention_against_numpy():
    query, value, key = randn(2, 4, 6), randn(2, 5, 3), randn(2, 5, 2)
    mha = layers.MultiHeadAttention(num_heads=3, key_dim=2, value_dim=4,
                                    bias_initializer="random_normal")
    out, scores = mha(query, value, key=key, return_attention_scores=True)
    expected, probs = reference(mha.get_weights(), query, value, key)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(scores, probs, rtol=1e-4, atol=1e-6)
    x = randn(2, 4, 6)
    self_attention = layers.MultiHeadAttention(2, 3)
    np.testing.assert_allclose(self_attention(x, x),
                               reference(self_attention.get_weights(), x, x)[0],
                               rtol=1e-4, atol=1e-5)


def test_weights_as_keras():
    mha = layers.MultiHeadAttention(num_heads=3, key_dim=2, value_dim=4, output_shape=5,
                                    name="mha")
    mha(randn(1, 4, 6), randn(1, 5, 3))
    assert [(w.name, w.shape) for w in mha.weights] == [
        ("mha/query/kernel", (6, 3, 2)), ("mha/query/bias", (3, 2)),
        ("mha/key/kernel", (3, 3, 2)), ("mha/key/bias", (3, 2)),
        ("mha/value/kernel", (3, 3, 4)), ("mha/value/bias", (3, 4)),
        ("mha/attention_output/kernel", (3, 4, 5)), ("mha/attention_output/bias", (5,))]
    assert mha.count_params() == (6 * 6 + 6) + (3 * 6 + 6) + (3 * 12 + 12) + (12 * 5 + 5)
    no_bias = layers.MultiHeadAttention(2, 4, use_bias=False)
    no_bias(randn(1, 3, 8), randn(1, 3, 8))
    assert [w.shape for w in no_bias.weights] == [(8, 2, 4)] * 3 + [(2, 4, 8)]


def test_attention_and_causal_masks():
    query, value = randn(2, 4, 6), randn(2, 4, 6)
    mask = RNG.random((2, 4, 4)) > 0.4
    mask[0, 1] = False                        # a row with nothing to attend to: uniform
    mha = layers.MultiHeadAttention(2, 3)
    out = mha(query, value, attention_mask=mask)
    np.testing.assert_allclose(out, reference(mha.get_weights(), query, value, keep=mask)[0],
                               rtol=1e-4, atol=1e-5)
    causal = np.tril(np.ones((4, 4), bool))[None]
    _, scores = mha(query, value, use_causal_mask=True, return_attention_scores=True)
    assert np.all(scores[:, :, np.triu_indices(4, 1)[0], np.triu_indices(4, 1)[1]] < 1e-6)
    out = mha(query, value, attention_mask=mask.astype(np.int64), use_causal_mask=True)
    np.testing.assert_allclose(out, reference(mha.get_weights(), query, value,
                                              keep=mask & causal)[0], rtol=1e-4, atol=1e-5)
    assert np.all(np.isfinite(out))


def test_masks_carried_by_the_inputs():
    ids = np.array([[3, 5, 2, 0], [1, 4, 0, 0]])
    embed = layers.Embedding(8, 6, mask_zero=True)
    mha = layers.MultiHeadAttention(2, 3)

    def run(batch):
        inputs = hiapi.Input((batch.shape[1],), dtype="int64")
        x = embed(inputs)
        out = mha(x, x)
        assert out._keras_mask is not None           # the query's mask, as in Keras
        pooled = layers.GlobalAveragePooling1D()(out)
        return hiapi.Model(inputs, [out, pooled]).predict(batch, verbose=0)
    padded, pooled = run(ids)
    for i, n in enumerate([3, 2]):
        alone, alone_pooled = run(ids[i:i + 1, :n])
        np.testing.assert_allclose(padded[i, :n], alone[0], rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(pooled[i], alone_pooled[0], rtol=1e-4, atol=1e-5)


def test_attention_axes_over_the_second_axis():
    x = randn(2, 3, 5, 4)                     # attend over axis 2; axis 1 is like batch
    mha = layers.MultiHeadAttention(2, 3, attention_axes=(2,))
    out, scores = mha(x, x, return_attention_scores=True)
    assert out.shape == (2, 3, 5, 4) and scores.shape == (2, 3, 2, 5, 5)
    weights = mha.get_weights()
    for row in range(3):
        expected, probs = reference(weights, x[:, row], x[:, row])
        np.testing.assert_allclose(out[:, row], expected, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(scores[:, row], probs, rtol=1e-4, atol=1e-6)
    joint = layers.MultiHeadAttention(1, 2)        # default: attend over axes 1 and 2 jointly
    out = joint(x, x)
    flat = x.reshape(2, 15, 4)
    np.testing.assert_allclose(out.reshape(2, 15, 4),
                               reference(joint.get_weights(), flat, flat)[0],
                               rtol=1e-4, atol=1e-5)


def test_dropout_only_in_training():
    x = randn(4, 6, 8)
    mha = layers.MultiHeadAttention(2, 4, dropout=0.5, seed=1)
    inference = mha(x, x)
    np.testing.assert_allclose(inference, reference(mha.get_weights(), x, x)[0], rtol=1e-4,
                               atol=1e-5)
    assert not np.allclose(mha(x, x, training=True), inference)


def test_functional_model_trains_saves_and_loads(tmp_path):
    hiapi.utils.set_random_seed(2)
    tokens = hiapi.Input((6, 8))
    attended = layers.MultiHeadAttention(2, 4, name="mha")(tokens, tokens,
                                                          use_causal_mask=True)
    x = layers.LayerNormalization()(layers.Add()([tokens, attended]))
    model = hiapi.Model(tokens, layers.Dense(1)(layers.GlobalAveragePooling1D()(x)))
    model.compile("adam", "mse")
    x_data, y_data = randn(32, 6, 8), randn(32, 1)
    before = model.evaluate(x_data, y_data, verbose=0)
    model.fit(x_data, y_data, epochs=8, batch_size=8, verbose=0)
    assert model.evaluate(x_data, y_data, verbose=0) < before
    model.save(tmp_path / "mha.hiapi")
    loaded = hiapi.models.load_model(tmp_path / "mha.hiapi")
    assert loaded.get_layer("mha").get_config()["_call_options"]["use_causal_mask"]
    np.testing.assert_allclose(loaded.predict(x_data, verbose=0),
                               model.predict(x_data, verbose=0), rtol=1e-5, atol=1e-6)


def test_config_round_trip_and_errors():
    mha = layers.MultiHeadAttention(4, 8, value_dim=6, dropout=0.1, use_bias=False,
                                    output_shape=10, attention_axes=2, seed=3)
    config = mha.get_config()
    assert {k: config[k] for k in ("num_heads", "key_dim", "value_dim", "dropout", "use_bias",
                                   "output_shape", "attention_axes")} == {
        "num_heads": 4, "key_dim": 8, "value_dim": 6, "dropout": 0.1, "use_bias": False,
        "output_shape": 10, "attention_axes": (2,)}
    assert "_call_options" not in config
    assert mha.compute_output_shape((None, 5, 3, 7), (None, 5, 4, 2)) == (None, 5, 3, 10)
    assert layers.MultiHeadAttention(2, 2).compute_output_shape((None, 3, 4)) == (None, 3, 4)
    assert layers.MultiHeadAttention.from_config(config).get_config() == config
    with pytest.raises(ValueError, match="num_heads must be a positive integer"):
        layers.MultiHeadAttention(0, 4)
    with pytest.raises(ValueError, match="dropout"):
        layers.MultiHeadAttention(2, 4, dropout=1.5)
    q = hiapi.Input((3, 4))
    shared = layers.MultiHeadAttention(2, 2)
    shared(q, q)
    with pytest.raises(ValueError, match="use a second layer"):
        shared(q, q, use_causal_mask=True)
    with pytest.raises(ValueError, match="attention_axes"):
        layers.MultiHeadAttention(2, 2, attention_axes=(3,))(randn(1, 3, 4), randn(1, 3, 4))


def test_gradients_match_finite_differences():
    from check_op import check_op
    q, v = RNG.normal(size=(2, 4, 6)), RNG.normal(size=(2, 5, 6))
    cross = layers.MultiHeadAttention(2, 3, bias_initializer="random_normal")
    check_op(lambda a, b: cross(a, b), [q, v], batch=True, atol=1e-5, rtol=1e-4)
    causal = layers.MultiHeadAttention(2, 3)
    check_op(lambda a: causal(a, a, use_causal_mask=True), [q], batch=True, atol=1e-5,
             rtol=1e-4)
