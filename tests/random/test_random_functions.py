"""``hiapi.random`` on arrays: Keras 3's signatures and defaults, the distributions' statistics,
repeatability for a seed, fresh draws from a SeedGenerator, and the errors."""
import math

import numpy as np
import pytest

import hiapi
from hiapi import random

N = 200_000          # samples for the statistics: standard errors ~ 1 / sqrt(N) ~ 0.002


def test_normal_statistics_shape_and_dtype():
    x = random.normal((N,), mean=1.5, stddev=2.0, seed=3)
    assert x.shape == (N,) and x.dtype == np.float32
    assert x.mean() == pytest.approx(1.5, abs=0.02)
    assert x.std() == pytest.approx(2.0, abs=0.02)
    # the fraction within one standard deviation, 68.27% for a normal distribution
    assert np.mean(np.abs(x - 1.5) < 2.0) == pytest.approx(math.erf(1 / math.sqrt(2)), abs=0.005)
    assert random.normal((2, 3, 4), dtype="float64", seed=1).dtype == np.float64


def test_uniform_statistics_and_range():
    x = random.uniform((N,), minval=-2.0, maxval=6.0, seed=4)
    assert x.dtype == np.float32 and x.min() >= -2.0 and x.max() < 6.0
    assert x.mean() == pytest.approx(2.0, abs=0.03)
    assert x.std() == pytest.approx(8.0 / math.sqrt(12.0), abs=0.02)
    counts = np.histogram(x, bins=8, range=(-2, 6))[0]     # flat: each bin N/8
    assert np.all(np.abs(counts / N - 1 / 8) < 0.005)
    default = random.uniform((1000,), seed=5)
    assert 0.0 <= default.min() and default.max() < 1.0


def test_truncated_normal_stays_within_two_stddev_with_the_truncated_moments():
    x = random.truncated_normal((N,), mean=-1.0, stddev=0.5, seed=6)
    assert x.min() >= -2.0 and x.max() <= 0.0           # mean -+ 2 stddev
    assert x.mean() == pytest.approx(-1.0, abs=0.01)
    # standard normal truncated to [-2, 2]: variance 1 - 2 * 2 phi(2) / (2 Phi(2) - 1)
    phi2 = math.exp(-2.0) / math.sqrt(2 * math.pi)
    std = math.sqrt(1 - 4 * phi2 / math.erf(math.sqrt(2)))
    assert x.std() == pytest.approx(0.5 * std, abs=0.003)
    # and its shape, not only its moments: the fraction within one standard deviation
    inside = math.erf(1 / math.sqrt(2)) / math.erf(math.sqrt(2))
    assert np.mean(np.abs(x + 1.0) < 0.5) == pytest.approx(inside, abs=0.005)


def test_randint_is_uniform_over_the_range():
    x = random.randint((N,), minval=-3, maxval=7, seed=7)
    assert x.dtype == np.int32 and x.min() == -3 and x.max() == 6
    counts = np.bincount(x + 3, minlength=10)
    assert np.all(np.abs(counts / N - 0.1) < 0.005)
    assert random.randint((4,), 0, 2, dtype="int64", seed=1).dtype == np.int64


def test_an_int_seed_repeats_and_a_seed_generator_advances():
    for draw in (lambda s: random.normal((3, 4), seed=s),
                 lambda s: random.uniform((5,), seed=s),
                 lambda s: random.truncated_normal((5,), seed=s),
                 lambda s: random.randint((6,), 0, 100, seed=s)):
        np.testing.assert_array_equal(draw(11), draw(11))
        assert not np.array_equal(draw(11), draw(12))
        gen = random.SeedGenerator(11)
        first, second = draw(gen), draw(gen)
        assert not np.array_equal(first, second)
        again = random.SeedGenerator(11)            # a new generator with the seed: same run
        np.testing.assert_array_equal(draw(again), first)
        np.testing.assert_array_equal(draw(again), second)


def test_seed_none_uses_the_global_generator_which_set_random_seed_resets():
    hiapi.utils.set_random_seed(5)
    a, b = random.normal((4,)), random.normal((4,))
    assert not np.array_equal(a, b)
    hiapi.utils.set_random_seed(5)
    np.testing.assert_array_equal(random.normal((4,)), a)
    np.testing.assert_array_equal(random.normal((4,)), b)


def test_seed_generator_state_and_config():
    gen = random.SeedGenerator(seed=42, name="gen")
    assert gen.state.numpy().tolist() == [42, 0] and gen.state.dtype == np.int64
    assert not gen.state.trainable
    random.uniform((2,), seed=gen)
    assert gen.state.numpy().tolist() == [42, 1]
    assert gen.get_config() == {"seed": 42, "name": "gen"}
    assert random.SeedGenerator.from_config(gen.get_config()).state.numpy().tolist() == [42, 0]
    with pytest.raises(ValueError, match="seed must be an integer or None, got 1.5"):
        random.SeedGenerator(1.5)
    with pytest.raises(ValueError, match="unrecognized keyword arguments"):
        random.SeedGenerator(1, backend="jax")


def test_dropout_zeroes_a_fraction_and_scales_the_rest():
    x = np.ones((400, 500), np.float32)
    y = random.dropout(x, 0.3, seed=1)
    assert y.shape == x.shape and y.dtype == np.float32
    assert set(np.unique(y).tolist()) == {0.0, np.float32(1 / 0.7)}
    assert np.mean(y == 0) == pytest.approx(0.3, abs=0.005)
    assert y.mean() == pytest.approx(1.0, abs=0.01)               # unbiased
    shared = random.dropout(x, 0.5, noise_shape=(1, 500), seed=2)  # one mask for every row
    assert np.all(shared == shared[:1])
    per_row = random.dropout(x, 0.5, noise_shape=(None, 1), seed=2)
    assert np.all(per_row == per_row[:, :1])
    np.testing.assert_array_equal(random.dropout(x, 0.0, seed=1), x)
    np.testing.assert_array_equal(random.dropout(x, 1.0, seed=1), np.zeros_like(x))


def test_shuffle_permutes_whole_slices_along_the_axis():
    x = np.arange(60).reshape(6, 10)
    rows = random.shuffle(x, seed=3)
    assert sorted(map(tuple, rows.tolist())) == sorted(map(tuple, x.tolist()))
    assert not np.array_equal(rows, x)
    columns = random.shuffle(x, axis=1, seed=3)
    np.testing.assert_array_equal(np.sort(columns, axis=1), x)    # each row's values kept
    assert all(np.array_equal(columns[i] - columns[0], np.full(10, 10 * i)) for i in range(6))
    # uniform: each of the 6 elements lands first about 1/6 of the time
    gen = random.SeedGenerator(0)
    firsts = np.bincount([random.shuffle(np.arange(6), seed=gen)[0] for _ in range(3000)])
    assert np.all(np.abs(firsts / 3000 - 1 / 6) < 0.03)


def test_categorical_samples_the_softmax_distribution():
    probabilities = np.array([[0.1, 0.2, 0.7], [0.5, 0.5, 0.0]])
    with np.errstate(divide="ignore"):
        logits = np.log(probabilities).astype(np.float32)
    samples = random.categorical(logits, 20_000, seed=4)
    assert samples.shape == (2, 20_000) and samples.dtype == np.int32
    for row, p in zip(samples, probabilities):
        np.testing.assert_allclose(np.bincount(row, minlength=3) / 20_000, p, atol=0.01)
    assert random.categorical(logits, 3, dtype="int64", seed=1).dtype == np.int64


@pytest.mark.parametrize("call, message", [
    (lambda: random.normal((2, -1)), "shape must be a tuple of non-negative integers"),
    (lambda: random.normal("ab"), "shape must be a tuple of non-negative integers"),
    (lambda: random.normal((None, 3)), "unknown first \\(batch\\) axis"),
    (lambda: random.normal((2,), dtype="int32"), "requires a floating point dtype"),
    (lambda: random.uniform((2,), minval=1.0, maxval=1.0), "minval must be less than maxval"),
    (lambda: random.uniform((2,), minval=3, maxval=1), "minval=3, maxval=1"),
    (lambda: random.randint((2,), 5, 5), "minval must be less than maxval"),
    (lambda: random.randint((2,), 0, 10, dtype="float32"), "requires an integer dtype"),
    (lambda: random.randint((2,), 0, 2**25), "at most 2\\*\\*24"),
    (lambda: random.randint((2,), 0, 300, dtype="int8"), "does not fit dtype int8"),
    (lambda: random.normal((2,), seed="a"), "seed must be an integer, a "
                                            "hiapi.random.SeedGenerator or None"),
    (lambda: random.dropout(np.ones(3), 1.5), "rate must be in \\[0, 1\\]"),
    (lambda: random.dropout(np.ones((2, 3)), 0.5, noise_shape=(2, 2)), "noise_shape"),
    (lambda: random.shuffle(np.ones((2, 3)), axis=2), "axis must be an integer in"),
    (lambda: random.categorical(np.ones(3), 2), "logits must be a 2-D tensor"),
    (lambda: random.categorical(np.ones((2, 3)), 0), "num_samples must be a positive"),
])
def test_bad_arguments_are_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()
