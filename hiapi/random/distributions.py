"""``normal``, ``uniform``, ``truncated_normal`` and ``randint`` with Keras 3's signatures.

All are built on the counter-based ``random_uniform`` op (24-bit uniforms in [0, 1)) and
``random_normal`` (Box-Muller on two uniform streams)::

    hiapi.random.normal((2, 3), seed=42)               # the same array at every call
    gen = hiapi.random.SeedGenerator(42)
    hiapi.random.uniform((2, 3), seed=gen)             # new numbers at every call
"""
from __future__ import annotations

import math

import numpy as np

from hiapi.graph import ops as O
from hiapi.random.sampling import check_dtype, check_number, check_shape, like, sample
from hiapi.runtime.settings import floatx

# erf(sqrt(2)): the probability mass of a standard normal within two standard deviations
_TWO_SIGMA_MASS = math.erf(math.sqrt(2.0))
# Giles (2010), "Approximating the erfinv function", single precision, for w = -log(1 - x^2)
# below 5: |x| <= erf(sqrt 2) gives w < 2.5, so this one branch covers the truncated normal
_ERFINV_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                   0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)


def normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """Samples of a normal distribution (Keras's ``keras.random.normal``). ``seed``: an int
    (the same numbers at every call), a ``SeedGenerator`` (new numbers at every call or step)
    or None (hiapi's global generator)."""
    what = "hiapi.random.normal"
    shape, dtype = check_shape(shape, what), check_dtype(dtype, "f", what, floatx())
    mean, stddev = check_number(mean, "mean", what), check_number(stddev, "stddev", what)

    def build(seed, counter):
        z = O.random_normal(like(shape, what), seed, counter)
        return O.cast(z * np.float32(stddev) + np.float32(mean), dtype)
    return sample(what, build, [], seed, (shape, mean, stddev, dtype.str))


def uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
    """Samples of a uniform distribution on [minval, maxval) (``keras.random.uniform``), at
    a resolution of 2**-24 of the range."""
    what = "hiapi.random.uniform"
    shape, dtype = check_shape(shape, what), check_dtype(dtype, "f", what, floatx())
    minval, maxval = _bounds(minval, maxval, what)

    def build(seed, counter):
        u = O.random_uniform(like(shape, what), seed, counter)
        return O.cast(u * np.float32(maxval - minval) + np.float32(minval), dtype)
    return sample(what, build, [], seed, (shape, minval, maxval, dtype.str))


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """Samples of a normal distribution truncated to two standard deviations around the mean
    (``keras.random.truncated_normal``), drawn exactly by the inverse CDF rather than by
    redrawing: ``z = sqrt(2) erfinv((2u - 1) erf(sqrt 2))`` for uniform u, so one pass
    always suffices."""
    what = "hiapi.random.truncated_normal"
    shape, dtype = check_shape(shape, what), check_dtype(dtype, "f", what, floatx())
    mean, stddev = check_number(mean, "mean", what), check_number(stddev, "stddev", what)

    def build(seed, counter):
        u = O.random_uniform(like(shape, what), seed, counter)
        x = (u * np.float32(2.0) - np.float32(1.0)) * np.float32(_TWO_SIGMA_MASS)
        z = _erfinv_central(x) * np.float32(math.sqrt(2.0))
        return O.cast(z * np.float32(stddev) + np.float32(mean), dtype)
    return sample(what, build, [], seed, (shape, mean, stddev, dtype.str))


def _erfinv_central(x):
    w = O.log((1.0 - x) * (1.0 + x)) * np.float32(-1.0) - np.float32(2.5)
    p = O.constant(np.float32(_ERFINV_CENTRAL[0]))
    for coefficient in _ERFINV_CENTRAL[1:]:
        p = p * w + np.float32(coefficient)
    return p * x


def randint(shape, minval, maxval, dtype="int32", seed=None):
    """Integers uniform on [minval, maxval) (``keras.random.randint``). The range may hold up
    to 2**24 values (the resolution of hiapi's uniforms)."""
    what = "hiapi.random.randint"
    shape, dtype = check_shape(shape, what), check_dtype(dtype, "iu", what, "int32")
    minval, maxval = _bounds(minval, maxval, what)
    if any(not float(v).is_integer() for v in (minval, maxval)):
        raise ValueError(f"{what}: minval and maxval must be integers, got {minval!r} and "
                         f"{maxval!r}")
    minval, maxval = int(minval), int(maxval)
    if maxval - minval > 2**24:
        raise ValueError(f"{what}: the range [{minval}, {maxval}) holds {maxval - minval} "
                         f"values; hiapi draws from 24-bit uniforms, so at most 2**24")
    info = np.iinfo(dtype)
    if minval < info.min or maxval - 1 > info.max:
        raise ValueError(f"{what}: [{minval}, {maxval}) does not fit dtype {dtype.name}")

    def build(seed, counter):
        u = O.cast(O.random_uniform(like(shape, what), seed, counter), np.float64)
        # u * range < range exactly in float64 (u <= 1 - 2**-24), and truncation is floor
        offset = O.cast(u * float(maxval - minval), np.int64)
        return O.cast(offset + np.int64(minval), dtype)
    return sample(what, build, [], seed, (shape, minval, maxval, dtype.str))


def _bounds(minval, maxval, what):
    minval = check_number(minval, "minval", what)
    maxval = check_number(maxval, "maxval", what)
    if not minval < maxval:
        raise ValueError(f"{what}: minval must be less than maxval, got minval={minval!r}, "
                         f"maxval={maxval!r}")
    return minval, maxval
