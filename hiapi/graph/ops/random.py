"""Counter-based random numbers: ``random_uniform(like, seed, counter)``.

Each element's value is a hash of (seed, counter, element index) (SplitMix64's mixer), so a
mask depends only on the seed and the step counter: reproducible for a seed, different at every
step, and the same on every backend that implements the same 64-bit integer arithmetic.
"""
import numpy as np

from hiapi.graph.op import Op, as_var


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


def splitmix64_uniform(xp, shape, seed, counter):
    """The reference algorithm, written against an array module ``xp`` (numpy or cupy)."""
    size = int(np.prod(shape))
    return _mix(xp, xp.arange(size, dtype=xp.uint64), seed, counter).reshape(shape)


def splitmix64_uniform_into(out, seed, counter, chunk=1 << 15):
    """The same numbers written into ``out`` (a C-contiguous numpy array) ``chunk`` elements at
    a time: the whole-array algorithm's uint64 temporaries are five times the output, outside
    the memory plan; a chunk's are bounded (1 MiB) and reused from the heap."""
    flat = out.reshape(-1)
    for start in range(0, flat.size, chunk):
        stop = min(start + chunk, flat.size)
        flat[start:stop] = _mix(np, np.arange(start, stop, dtype=np.uint64), seed, counter)


def _mix(xp, z, seed, counter):
    """SplitMix64 of the element indices ``z`` (uint64, changed in place) as float32 uniforms."""
    with np.errstate(over="ignore"):
        z += xp.uint64((seed * 0x9E3779B97F4A7C15 + int(counter) * 0xD1B54A32D192ED03)
                       % 2**64)
        z ^= z >> xp.uint64(30)
        z *= xp.uint64(0xBF58476D1CE4E5B9)
        z ^= z >> xp.uint64(27)
        z *= xp.uint64(0x94D049BB133111EB)
        z ^= z >> xp.uint64(31)
    return (z >> xp.uint64(40)).astype(xp.float32) * xp.float32(2.0 ** -24)


def random_normal(like, seed, counter):
    """Standard normal float32 numbers shaped like ``like``, from two uniform streams (seeds
    ``seed`` and ``seed + 1``, same counter) by the Box-Muller transform,
    ``sqrt(-2 log(1 - u1)) cos(2 pi u2)`` (Box & Muller 1958); ``1 - u1`` is in (0, 1], so the
    log is finite (|z| < 5.8 with 24-bit uniforms)."""
    from hiapi.graph import ops as O
    u1 = random_uniform(like, seed, counter)
    u2 = random_uniform(like, int(seed) + 1, counter)
    return O.sqrt(O.log(1.0 - u1) * -2.0) * O.cos(u2 * np.float32(2 * np.pi))
