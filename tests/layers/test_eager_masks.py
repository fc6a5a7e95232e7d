"""``_keras_mask`` on eagerly computed outputs, as Keras's masking guide prints it, and the
mask going on to the next eager call."""
import numpy as np

import hiapi
from hiapi import layers

PADDED = np.array([[711, 632, 71, 0, 0, 0], [73, 8, 3215, 55, 927, 0],
                   [83, 91, 1, 645, 1253, 927]])


def test_embedding_and_masking_outputs_carry_their_masks():
    embedded = layers.Embedding(input_dim=5000, output_dim=16, mask_zero=True)(PADDED)
    np.testing.assert_array_equal(embedded._keras_mask, PADDED != 0)
    assert embedded.shape == (3, 6, 16)
    unmasked = np.repeat(PADDED[..., None], 10, axis=-1).astype("float32")
    masked = layers.Masking()(unmasked)
    np.testing.assert_array_equal(masked._keras_mask, PADDED != 0)
    np.testing.assert_array_equal(masked, unmasked)


def test_outputs_without_a_mask_are_plain_arrays():
    out = layers.Dense(2)(np.ones((2, 3), "float32"))
    assert type(out) is np.ndarray
    derived = layers.Embedding(10, 2, mask_zero=True)(PADDED % 10) * 2.0
    assert getattr(derived, "_keras_mask", None) is None


def test_the_mask_goes_on_to_the_next_eager_call():
    embedding = layers.Embedding(5000, 4, mask_zero=True)
    lstm = layers.LSTM(3)
    embedded = embedding(PADDED)
    implicit = lstm(embedded)
    explicit = lstm(np.asarray(embedded), mask=PADDED != 0)
    np.testing.assert_allclose(implicit, explicit, rtol=1e-6)
    unmasked = lstm(np.asarray(embedded))
    assert not np.allclose(unmasked[0], implicit[0])     # row 0 has padding
    passed_on = layers.Dropout(0.5)(embedded)             # supports masking: passes it on
    np.testing.assert_array_equal(passed_on._keras_mask, PADDED != 0)


def test_a_symbolic_model_and_eager_calls_agree():
    inputs = hiapi.Input((6,), dtype="int32")
    embedding, pooling = layers.Embedding(5000, 4, mask_zero=True), \
        layers.GlobalAveragePooling1D()
    model = hiapi.Model(inputs, pooling(embedding(inputs)))
    np.testing.assert_allclose(pooling(embedding(PADDED)), model.predict(PADDED, verbose=0),
                               rtol=1e-6)


class StepsWithZeroState(layers.Layer):
    """The functional API guide's CustomRNN: its ``call`` makes a state of
    ``(inputs.shape[0], units)`` zeros, which needs the batch size of an eager call."""

    def __init__(self, units=4):
        super().__init__()
        self.units = units
        self.projection = layers.Dense(units, activation="tanh")

    def call(self, inputs):
        state = hiapi.ops.zeros(shape=(inputs.shape[0], self.units))
        outputs = []
        for t in range(inputs.shape[1]):
            state = self.projection(inputs[:, t, :]) + state
            outputs.append(state)
        return hiapi.ops.stack(outputs, axis=1)


def test_an_eager_call_sees_the_concrete_batch_size():
    layer = StepsWithZeroState()
    x = np.random.default_rng(0).normal(size=(2, 3, 5)).astype("float32")
    out = layer(x)
    assert out.shape == (2, 3, 4)
    kernel, bias = (w.numpy() for w in layer.projection.weights)
    state = np.zeros((2, 4), np.float32)
    for t in range(3):
        state = np.tanh(x[:, t] @ kernel + bias) + state
        np.testing.assert_allclose(out[:, t], state, rtol=1e-5, atol=1e-6)
    assert layer(x[:1]).shape == (1, 3, 4)          # another batch size: traced again


def test_an_eager_call_on_a_one_key_dict_keeps_the_dict():
    class Pick(hiapi.layers.Layer):
        def call(self, inputs):
            return inputs["a"] * 2.0

    np.testing.assert_array_equal(Pick()({"a": np.ones((2, 3), np.float32)}),
                                  np.full((2, 3), 2.0))
