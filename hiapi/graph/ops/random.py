"""Counter-based random numbers: ``random_uniform(like, seed, counter)``.

Each element's value is a hash of (seed, counter, element index) (SplitMix64's mixer), so a
mask depends only on the seed and the step counter: reproducible for a seed, different at every
step, and the same on every backend that implements the same 64-bit integer arithmetic. The
algorithm itself is the kernels' (``hiapi/backends/splitmix.py``).
"""
import numpy as np

from hiapi.graph.op import Op, as_var
from hiapi.graph.op_namespace import ops as O


class RandomUniform(Op):
    """Uniform [0, 1) float32 numbers shaped like ``like`` (whose values are not read)."""
    name = "random_uniform"

    def __init__(self, seed):
        self.seed = int(seed) % 2**63

    def infer(self, like, counter):
        if counter.ndim != 0 or counter.dtype.kind not in "iu":
            raise TypeError(f"random_uniform: the counter must be an integer scalar, got "
                            f"shape {counter.shape} dtype {counter.dtype.name}")
        return like.shape, np.dtype(np.float32)

    def grad(self, inputs, y, g):
        return [None, None]


def random_uniform(like, seed, counter):
    return RandomUniform(seed)(as_var(like), as_var(counter))


def random_normal(like, seed, counter):
    """Standard normal float32 numbers shaped like ``like``, from two uniform streams (seeds
    ``seed`` and ``seed + 1``, same counter) by the Box-Muller transform,
    ``sqrt(-2 log(1 - u1)) cos(2 pi u2)`` (Box & Muller 1958); ``1 - u1`` is in (0, 1], so the
    log is finite (|z| < 5.8 with 24-bit uniforms)."""
    u1 = random_uniform(like, seed, counter)
    u2 = random_uniform(like, int(seed) + 1, counter)
    return O.sqrt(O.log(1.0 - u1) * -2.0) * O.cos(u2 * np.float32(2 * np.pi))


def dropout(x, rate, seed, counter, noise_shape=None):
    """``x`` with a fraction ``rate`` of entries zeroed and the rest scaled by 1 / (1 - rate)
    (Srivastava et al. 2014), the mask drawn for (seed, counter). ``noise_shape`` (1 on an
    axis: one mask value shared along it) shapes the mask; the ``Dropout`` layer and
    ``hiapi.random.dropout`` both draw it here."""
    if rate == 0.0:
        return x
    if rate == 1.0:
        return x * np.asarray(0, x.dtype)
    mask_like = x
    for axis, size in enumerate(noise_shape or ()):     # a view: one element along the axis
        if size == 1 and x.shape[axis] != 1:
            mask_like = O.slice_axis(mask_like, axis, 0, 1)
    keep = random_uniform(mask_like, seed, counter) >= np.float32(rate)
    return O.where(keep, x * np.asarray(1.0 / (1.0 - rate), x.dtype), np.asarray(0, x.dtype))
