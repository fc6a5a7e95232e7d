"""Writes keras_sequence_reference.npz: inputs, weights and outputs of Keras 3's own sequence
layers (MultiHeadAttention, masked RNNs, Bidirectional, Masking/TimeDistributed/pooling, a
masked loss), which tests/layers/test_keras_reference.py loads into hiapi's layers.

Not run by the tests (they need no Keras). Made with Keras 3.15.1 on the jax backend:
``pip install keras jax scipy && KERAS_BACKEND=jax python make_keras_sequence_reference.py``.
"""
import os
import pathlib

os.environ.setdefault("KERAS_BACKEND", "jax")
import keras  # noqa: E402
import numpy as np  # noqa: E402
from keras import layers  # noqa: E402

RNG = np.random.default_rng(0)
IDS = np.array([[3, 4, 2, 0, 0], [1, 2, 3, 4, 5], [0, 0, 6, 1, 0]])
ARRAYS = {}


def randn(*shape):
    return RNG.normal(size=shape).astype("float32")


def record(name, model, inputs, **extra):
    outputs = model(inputs)
    outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    for i, a in enumerate(inputs if isinstance(inputs, list) else [inputs]):
        ARRAYS[f"{name}/input{i}"] = np.asarray(a)
    for i, a in enumerate(model.get_weights()):
        ARRAYS[f"{name}/weight{i}"] = np.asarray(a)
    for i, a in enumerate(outputs):
        ARRAYS[f"{name}/output{i}"] = np.asarray(a)
    ARRAYS[f"{name}/params"] = np.array(model.count_params())
    for key, value in extra.items():
        ARRAYS[f"{name}/{key}"] = np.asarray(value)


def embedded(steps=5, dim=3):
    ids = keras.Input((steps,), dtype="int32")
    return ids, layers.Embedding(10, dim, mask_zero=True)(ids)


def main():
    query, value, key = keras.Input((4, 6)), keras.Input((5, 3)), keras.Input((5, 2))
    out, scores = layers.MultiHeadAttention(3, 2, value_dim=4, output_shape=7,
                                            bias_initializer="random_normal")(
        query, value, key=key, return_attention_scores=True)
    record("mha_cross", keras.Model([query, value, key], [out, scores]),
           [randn(2, 4, 6), randn(2, 5, 3), randn(2, 5, 2)])

    mask = RNG.random((2, 4, 4)) > 0.4
    mask[0, 1] = False
    x, mask_in = keras.Input((4, 6)), keras.Input((4, 4), dtype="bool")
    out = layers.MultiHeadAttention(2, 3)(x, x, attention_mask=mask_in, use_causal_mask=True)
    record("mha_masked", keras.Model([x, mask_in], out), [randn(2, 4, 6), mask])

    grid = keras.Input((3, 5, 4))
    out, scores = layers.MultiHeadAttention(2, 3, attention_axes=(2,))(
        grid, grid, return_attention_scores=True)
    record("mha_axes", keras.Model(grid, [out, scores]), randn(2, 3, 5, 4))

    ids, x = embedded(dim=6)
    record("mha_carried", keras.Model(ids, layers.MultiHeadAttention(2, 3)(x, x)), IDS)

    ids, x = embedded()
    out = layers.SimpleRNN(4, return_sequences=True, go_backwards=True,
                           bias_initializer="random_normal")(x)
    record("SimpleRNN_rsTrue_gbTrue", keras.Model(ids, out), IDS)
    ids, x = embedded()
    out = layers.LSTM(4, bias_initializer="random_normal")(x)
    record("LSTM_rsFalse_gbFalse", keras.Model(ids, out), IDS)

    for name, layer, mode in [
            ("bi_LSTM_concat_rsTrue_stTrue",
             layers.LSTM(4, return_sequences=True, return_state=True), "concat"),
            ("bi_GRU_None_rsTrue_stFalse", layers.GRU(4, return_sequences=True), None),
            ("bi_SimpleRNN_ave_rsFalse_stFalse", layers.SimpleRNN(4), "ave")]:
        ids, x = embedded()
        record(name, keras.Model(ids, layers.Bidirectional(layer, merge_mode=mode)(x)), IDS)

    padded = randn(3, 5, 3)
    padded[0, 3:] = 0
    padded[2, :2] = 0
    x = keras.Input((5, 3))
    masked = layers.Masking()(x)
    per_step = layers.TimeDistributed(layers.Dense(4))(masked)
    record("masking_td_gap", keras.Model(x, [
        masked, per_step, layers.GlobalAveragePooling1D()(per_step),
        layers.LSTM(3, return_sequences=True)(per_step)]), padded)

    ids, x = embedded()
    probs = layers.Dense(3, activation="softmax")(layers.GRU(4, return_sequences=True)(x))
    model = keras.Model(ids, probs)
    model.compile(loss="sparse_categorical_crossentropy")
    labels = np.array([[0, 1, 2, 0, 0], [1, 1, 1, 1, 1], [2, 0, 0, 1, 2]])
    record("loss_masked", model, IDS, labels=labels,
           loss=model.evaluate(IDS, labels, verbose=0))

    path = pathlib.Path(__file__).with_name("keras_sequence_reference.npz")
    np.savez_compressed(path, **ARRAYS)


if __name__ == "__main__":
    main()
