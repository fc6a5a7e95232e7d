"""Keras 3's own numbers: weights, inputs and outputs of Keras's MultiHeadAttention, masked
recurrent layers, Bidirectional, Masking/TimeDistributed/GlobalAveragePooling1D and a masked
loss (data/keras_sequence_reference.npz, written by data/make_keras_sequence_reference.py with
Keras 3.15.1). Keras's weights load into hiapi's layers unchanged, the parameter counts agree,
and the outputs match, masked steps included."""
import pathlib

import numpy as np
import pytest

import hiapi
from hiapi import layers

DATA = np.load(pathlib.Path(__file__).parent / "data" / "keras_sequence_reference.npz")


def arrays(case, kind):
    found, i = [], 0
    while f"{case}/{kind}{i}" in DATA:
        found.append(DATA[f"{case}/{kind}{i}"])
        i += 1
    return found


def embedded(steps=5, dim=3):
    ids = hiapi.Input((steps,), dtype="int64")
    return ids, layers.Embedding(10, dim, mask_zero=True)(ids)


def mha_cross():
    query, value, key = hiapi.Input((4, 6)), hiapi.Input((5, 3)), hiapi.Input((5, 2))
    out, scores = layers.MultiHeadAttention(3, 2, value_dim=4, output_shape=7)(
        query, value, key=key, return_attention_scores=True)
    return hiapi.Model([query, value, key], [out, scores])


def mha_masked():
    x, mask = hiapi.Input((4, 6)), hiapi.Input((4, 4), dtype="bool")
    out = layers.MultiHeadAttention(2, 3)(x, x, attention_mask=mask, use_causal_mask=True)
    return hiapi.Model([x, mask], out)


def mha_axes():
    grid = hiapi.Input((3, 5, 4))
    out, scores = layers.MultiHeadAttention(2, 3, attention_axes=(2,))(
        grid, grid, return_attention_scores=True)
    return hiapi.Model(grid, [out, scores])


def mha_carried():
    ids, x = embedded(dim=6)
    return hiapi.Model(ids, layers.MultiHeadAttention(2, 3)(x, x))


def recurrent(layer):
    def build():
        ids, x = embedded()
        return hiapi.Model(ids, layer()(x))
    return build


def masking_td_gap():
    x = hiapi.Input((5, 3))
    masked = layers.Masking()(x)
    per_step = layers.TimeDistributed(layers.Dense(4))(masked)
    return hiapi.Model(x, [masked, per_step, layers.GlobalAveragePooling1D()(per_step),
                           layers.LSTM(3, return_sequences=True)(per_step)])


def loss_masked():
    ids, x = embedded()
    probs = layers.Dense(3, activation="softmax")(layers.GRU(4, return_sequences=True)(x))
    return hiapi.Model(ids, probs)


CASES = {
    "mha_cross": mha_cross, "mha_masked": mha_masked, "mha_axes": mha_axes,
    "mha_carried": mha_carried,
    "SimpleRNN_rsTrue_gbTrue": recurrent(
        lambda: layers.SimpleRNN(4, return_sequences=True, go_backwards=True)),
    "LSTM_rsFalse_gbFalse": recurrent(lambda: layers.LSTM(4)),
    "bi_LSTM_concat_rsTrue_stTrue": recurrent(lambda: layers.Bidirectional(
        layers.LSTM(4, return_sequences=True, return_state=True))),
    "bi_GRU_None_rsTrue_stFalse": recurrent(lambda: layers.Bidirectional(
        layers.GRU(4, return_sequences=True), merge_mode=None)),
    "bi_SimpleRNN_ave_rsFalse_stFalse": recurrent(lambda: layers.Bidirectional(
        layers.SimpleRNN(4), merge_mode="ave")),
    "masking_td_gap": masking_td_gap, "loss_masked": loss_masked,
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_keras_weights_give_keras_outputs(case):
    model = CASES[case]()
    assert model.count_params() == int(DATA[f"{case}/params"])
    model.set_weights(arrays(case, "weight"))
    inputs = arrays(case, "input")
    got = model.predict(inputs if len(inputs) > 1 else inputs[0], verbose=0)
    got = got if isinstance(got, list) else [got]
    expected = arrays(case, "output")
    assert len(got) == len(expected)
    for ours, theirs in zip(got, expected):
        np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=2e-6)


def test_masked_loss_equals_keras():
    model = loss_masked()
    model.set_weights(arrays("loss_masked", "weight"))
    model.compile(loss="sparse_categorical_crossentropy")
    loss = model.evaluate(DATA["loss_masked/input0"], DATA["loss_masked/labels"], verbose=0)
    assert loss == pytest.approx(float(DATA["loss_masked/loss"]), rel=1e-5)
