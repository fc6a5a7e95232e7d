"""Weight initializers with Keras's names and formulas.

Each is a callable ``init(shape, dtype) -> np.ndarray``; fan-in and fan-out follow Keras (for a
kernel of shape (..., in, out), the leading axes are the receptive field).
"""
import math

import numpy as np

from hiapi.graph import variable as _graph_variable
from hiapi.runtime import random_streams as _random
from hiapi.utils.naming import snake_case


def _fans(shape):
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    receptive = math.prod(shape[:-2])
    return shape[-2] * receptive, shape[-1] * receptive


class Initializer:
    def __call__(self, shape, dtype="float32"):
        raise NotImplementedError

    def get_config(self):
        return dict(vars(self))


class Zeros(Initializer):
    def __call__(self, shape, dtype="float32"):
        return np.zeros(shape, dtype)


class Ones(Initializer):
    def __call__(self, shape, dtype="float32"):
        return np.ones(shape, dtype)


class Constant(Initializer):
    def __init__(self, value=0.0):
        self.value = value

    def __call__(self, shape, dtype="float32"):
        return np.full(shape, self.value, dtype)


class RandomNormal(Initializer):
    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        self.mean, self.stddev, self.seed = mean, stddev, seed

    def __call__(self, shape, dtype="float32"):
        rng = _random.make_generator(self.seed)
        return rng.normal(self.mean, self.stddev, shape).astype(dtype)


class RandomUniform(Initializer):
    def __init__(self, minval=-0.05, maxval=0.05, seed=None):
        self.minval, self.maxval, self.seed = minval, maxval, seed

    def __call__(self, shape, dtype="float32"):
        rng = _random.make_generator(self.seed)
        return rng.uniform(self.minval, self.maxval, shape).astype(dtype)


class VarianceScaling(Initializer):
    """Keras's family: scale / fan, with a truncated normal (stddev corrected for the
    truncation at two standard deviations), an untruncated normal, or a uniform."""

    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None):
        if mode not in ("fan_in", "fan_out", "fan_avg"):
            raise ValueError(f"VarianceScaling: mode must be fan_in, fan_out or fan_avg, "
                             f"got {mode!r}")
        if distribution not in ("truncated_normal", "untruncated_normal", "uniform"):
            raise ValueError(f"VarianceScaling: distribution must be truncated_normal, "
                             f"untruncated_normal or uniform, got {distribution!r}")
        self.scale, self.mode, self.distribution, self.seed = scale, mode, distribution, seed

    def __call__(self, shape, dtype="float32"):
        fan_in, fan_out = _fans(tuple(shape))
        fan = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[self.mode]
        variance = self.scale / max(1.0, fan)
        rng = _random.make_generator(self.seed)
        if self.distribution == "uniform":
            limit = math.sqrt(3.0 * variance)
            return rng.uniform(-limit, limit, shape).astype(dtype)
        if self.distribution == "untruncated_normal":
            return rng.normal(0.0, math.sqrt(variance), shape).astype(dtype)
        stddev = math.sqrt(variance) / 0.87962566103423978
        return _truncated_normal(rng, stddev, shape).astype(dtype)


def _truncated_normal(rng, stddev, shape):
    """Normal samples redrawn until they lie within two standard deviations."""
    out = rng.normal(0.0, stddev, shape)
    bad = np.abs(out) > 2 * stddev
    while bad.any():
        out[bad] = rng.normal(0.0, stddev, int(bad.sum()))
        bad = np.abs(out) > 2 * stddev
    return out


def GlorotUniform(seed=None): return VarianceScaling(1.0, "fan_avg", "uniform", seed)
def GlorotNormal(seed=None): return VarianceScaling(1.0, "fan_avg", "truncated_normal", seed)
def HeNormal(seed=None): return VarianceScaling(2.0, "fan_in", "truncated_normal", seed)
def HeUniform(seed=None): return VarianceScaling(2.0, "fan_in", "uniform", seed)
def LecunNormal(seed=None): return VarianceScaling(1.0, "fan_in", "truncated_normal", seed)


def orthogonal(shape, dtype="float32"):
    """Keras's ``orthogonal`` initializer (gain 1): the Q of a QR decomposition of a normal
    matrix, sign-corrected so the distribution is uniform (Saxe et al. 2013)."""
    rows, cols = shape[0], int(np.prod(shape[1:]))
    flat = _random.generator().normal(size=(max(rows, cols), min(rows, cols)))
    q, r = np.linalg.qr(flat)
    q *= np.sign(np.diag(r))
    q = q.T if rows < cols else q
    return q[:rows, :cols].reshape(shape).astype(dtype)


def Orthogonal(seed=None):
    return orthogonal


_BY_NAME = {
    "orthogonal": Orthogonal,
    "zeros": Zeros, "ones": Ones, "constant": Constant, "random_normal": RandomNormal,
    "random_uniform": RandomUniform, "glorot_uniform": GlorotUniform,
    "glorot_normal": GlorotNormal, "he_normal": HeNormal, "he_uniform": HeUniform,
    "lecun_normal": LecunNormal, "variance_scaling": VarianceScaling,
    # Keras's aliases
    "uniform": RandomUniform, "normal": RandomNormal, "one": Ones, "zero": Zeros,
}


def get(identifier):
    """An initializer from a name (``"he_normal"``), a class name, a config dict from
    ``serialize``, or a callable."""
    if isinstance(identifier, dict):
        cls = {"VarianceScaling": VarianceScaling, "Zeros": Zeros, "Ones": Ones,
               "Constant": Constant, "RandomNormal": RandomNormal,
               "RandomUniform": RandomUniform}[identifier["class_name"]]
        return cls(**identifier["config"])
    if callable(identifier) and not isinstance(identifier, type):
        return identifier
    if isinstance(identifier, str):
        key = identifier if identifier in _BY_NAME else snake_case(identifier)
        if key in _BY_NAME:
            return _BY_NAME[key]()
        raise ValueError(f"Unknown initializer {identifier!r}: expected one of "
                         f"{', '.join(sorted(_BY_NAME))} or a callable(shape, dtype)")
    raise TypeError(f"initializer must be a name or a callable, got {identifier!r}")


def serialize(initializer):
    """A JSON-able description: the name as given, or the class and its arguments."""
    if isinstance(initializer, str):
        return initializer
    if isinstance(initializer, Initializer):
        return {"class_name": type(initializer).__name__, "config": initializer.get_config()}
    raise TypeError(f"cannot save initializer {initializer!r}: use a name or a "
                    f"hiapi.initializers.Initializer")


# ``hiapi.Variable(initializer="zeros", shape=...)`` (Keras 3's form) names initializers: the
# graph's Variable, a floor below, finds them here
_graph_variable.named_initializers = get
