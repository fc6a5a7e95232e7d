"""``hiapi.random`` inside a layer's ``call``: traced into the compiled step as counter-based
ops, repeating for a seed, advancing a SeedGenerator at every step, taking an unknown batch
size from the layer's inputs, and saving the generator's state with the model."""
import numpy as np
import pytest

import hiapi
from hiapi import layers, ops, random


class Noise(layers.Layer):
    """Returns ``x`` plus standard normal noise drawn with ``seed``."""

    def __init__(self, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.seed_generator = random.SeedGenerator(seed) if seed is None or \
            isinstance(seed, int) and seed >= 0 else seed

    def call(self, x):
        return x + random.normal(shape=ops.shape(x), seed=self.seed_generator)


class FixedNoise(layers.Layer):
    def call(self, x):
        return x + random.normal(shape=ops.shape(x), seed=123)


def noise_model(layer, width=4):
    return hiapi.Sequential([hiapi.Input((width,)), layer])


def test_a_seed_generator_in_call_draws_anew_at_every_step_and_repeats_for_its_seed():
    x = np.zeros((6, 4), np.float32)
    model = noise_model(Noise(7))
    first, second = model.predict(x, verbose=0), model.predict(x, verbose=0)
    assert first.shape == (6, 4) and not np.allclose(first, second)
    assert not np.allclose(first[:3], first[3:])        # two batches, two draws
    np.testing.assert_array_equal(noise_model(Noise(7)).predict(x, verbose=0), first)
    assert model.layers[-1].seed_generator.state.numpy().tolist() == [7, 2]
    # the compiled step draws what the same function draws on arrays, for the same counter
    np.testing.assert_array_equal(first, random.normal((6, 4), seed=random.SeedGenerator(7)))


def test_an_int_seed_in_call_gives_the_same_numbers_at_every_step():
    x = np.zeros((5, 4), np.float32)
    model = noise_model(FixedNoise())
    np.testing.assert_array_equal(model.predict(x, verbose=0), model.predict(x, verbose=0))
    np.testing.assert_array_equal(model.predict(x, verbose=0), random.normal((5, 4), seed=123))


def test_an_eager_layer_call_advances_the_generator():
    layer = Noise(3)
    x = np.zeros((2, 4), np.float32)
    a, b = layer(x), layer(x)
    assert not np.allclose(a, b)
    gen = random.SeedGenerator(3)
    np.testing.assert_array_equal(a, random.normal((2, 4), seed=gen))
    np.testing.assert_array_equal(b, random.normal((2, 4), seed=gen))


def test_the_generator_state_is_saved_and_a_loaded_model_continues_the_sequence(tmp_path):
    x = np.zeros((3, 4), np.float32)
    model = noise_model(Noise(11, name="noise"))
    model.compile(loss="mse")
    model.predict(x, verbose=0)
    assert len(model.state_variables) == 1
    path = str(tmp_path / "noisy.hiapi")
    model.save(path)
    expected = model.predict(x, verbose=0)
    loaded = hiapi.models.load_model(path, custom_objects={"Noise": Noise})
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), expected)


class Draws(layers.Layer):
    """Every random function at once, with the batch size unknown until the step runs."""

    def __init__(self):
        super().__init__()
        self.seed_generator = random.SeedGenerator(5)

    def call(self, x):
        batch = ops.shape(x)[0]
        gen = self.seed_generator
        return [random.uniform((batch, 3), minval=2.0, maxval=4.0, seed=gen),
                random.truncated_normal((batch, 2), dtype="float64", seed=gen),
                random.randint((batch, 5), 0, 3, seed=gen),
                random.dropout(x, 0.5, seed=gen),
                random.shuffle(x, seed=gen),
                random.categorical(x * 10.0, 2, seed=gen)]


def test_every_function_traces_with_an_unknown_batch_size():
    inputs = hiapi.Input((4,))
    model = hiapi.Model(inputs, Draws()(inputs))
    x = np.arange(28, dtype=np.float32).reshape(7, 4)
    uniform, truncated, integers, dropped, shuffled, classes = model.predict(x, verbose=0)
    assert uniform.shape == (7, 3) and 2.0 <= uniform.min() and uniform.max() < 4.0
    assert truncated.shape == (7, 2) and truncated.dtype == np.float64
    assert np.abs(truncated).max() <= 2.0
    assert integers.shape == (7, 5) and integers.dtype == np.int32 and integers.max() <= 2
    assert dropped.shape == (7, 4) and set(np.unique(dropped / np.maximum(x, 1))) <= {0.0, 2.0}
    assert sorted(map(tuple, shuffled.tolist())) == sorted(map(tuple, x.tolist()))
    assert classes.shape == (7, 2) and classes.dtype == np.int32
    assert np.all(classes == 3)      # logits 10 apart: the last class, all but surely


def test_a_batch_sized_shape_needs_a_layer_with_batched_inputs():
    with pytest.raises(ValueError, match="unknown first \\(batch\\) axis"):
        random.uniform((None, 3), seed=1)


class UnseededSampling(hiapi.Model):
    """The VAE's sampling of Keras's subclassing guide: ``keras.random.normal`` without a
    seed (the global generator) inside a subclassed model's ``call``."""

    def __init__(self):
        super().__init__()
        self.dense = layers.Dense(4)

    def call(self, x):
        return self.dense(x) + random.normal(shape=ops.shape(x))


def test_a_subclassed_model_may_draw_from_the_global_generator():
    x = np.zeros((8, 4), np.float32)
    model = UnseededSampling()
    model.compile(optimizer="sgd", loss="mse")
    model.fit(x, x, batch_size=4, epochs=1, verbose=0)    # the untracked-weight check passes
    first, second = model.predict(x, verbose=0), model.predict(x, verbose=0)
    assert first.shape == (8, 4) and not np.allclose(first, second)
    assert model.weights == model.dense.weights           # the global state is not the model's
