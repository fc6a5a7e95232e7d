"""SplitMix64's mixer as float32 uniforms: the numbers of the ``random_uniform`` op
(``hiapi/graph/ops/random.py``), each a hash of (seed, counter, element index).

Written against an array module ``xp``, so the numpy kernel runs it and the cupy kernel is
checked against it; a backend that implements the same 64-bit integer arithmetic gives the
same numbers.
"""
import numpy as np


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
