"""Random functions of a tensor with Keras 3's signatures: ``dropout``, ``shuffle``,
``categorical``. Like the distributions they run on arrays at once and build graph ops inside
a layer's ``call``; the ``Dropout`` layer draws its masks with the same graph function."""
from __future__ import annotations

import numpy as np

from hiapi.graph import ops as O
from hiapi.graph.var import Var
from hiapi.random.sampling import check_dtype, check_number, sample


def dropout(inputs, rate, noise_shape=None, seed=None):
    """``inputs`` with a fraction ``rate`` of entries zeroed and the rest scaled by
    1 / (1 - rate) (``keras.random.dropout``). ``noise_shape`` (1 on an axis: one mask value
    shared along it; None: the input's size) shapes the mask."""
    what = "hiapi.random.dropout"
    rate = check_number(rate, "rate", what)
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"{what}: rate must be in [0, 1], got {rate!r}")
    shape = tuple(inputs.shape) if isinstance(inputs, Var) else np.shape(inputs)
    noise_shape = _noise_shape(noise_shape, shape, what)

    def build(seed, counter, x):
        return O.dropout(x, rate, seed, counter, noise_shape)
    return sample(what, build, [inputs], seed, (float(rate), noise_shape))


def _noise_shape(noise_shape, shape, what):
    if noise_shape is None:
        return None
    noise_shape = tuple(noise_shape)
    if len(noise_shape) != len(shape) or any(
            n is not None and n != 1 and n != d for n, d in zip(noise_shape, shape)):
        raise ValueError(f"{what}: noise_shape {noise_shape} does not fit inputs of shape "
                         f"{shape}: each entry must be 1, None or the input's size")
    return tuple(None if n is None else int(n) for n in noise_shape)


def shuffle(x, axis=0, seed=None):
    """``x`` with its slices along ``axis`` in a random order (``keras.random.shuffle``): the
    permutation is the argsort of counter-based random keys."""
    what = "hiapi.random.shuffle"
    ndim = len(x.shape) if isinstance(x, Var) else np.ndim(x)
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)) or \
            not -ndim <= axis < ndim:
        raise ValueError(f"{what}: axis must be an integer in [{-ndim}, {ndim}) for a tensor "
                         f"of rank {ndim}, got {axis!r}")
    axis = int(axis) % ndim

    def build(seed, counter, x):
        moved = O.swapaxes(x, 0, axis) if axis else x
        keys = moved[(slice(None),) + (0,) * (moved.ndim - 1)]     # (n,): shape only
        order = O.argsort(O.random_uniform(keys, seed, counter), axis=0)
        shuffled = O.gather(moved, order, where=what)
        return O.swapaxes(shuffled, 0, axis) if axis else shuffled
    return sample(what, build, [x], seed, (axis,))


def categorical(logits, num_samples, dtype="int32", seed=None):
    """``num_samples`` class indices per row of the (batch, classes) ``logits``
    (``keras.random.categorical``), by the Gumbel-max trick: ``argmax(logits + g)`` with
    Gumbel noise ``g = -log(-log u)`` samples the softmax distribution exactly."""
    what = "hiapi.random.categorical"
    shape = tuple(logits.shape) if isinstance(logits, Var) else np.shape(logits)
    if len(shape) != 2:
        raise ValueError(f"{what}: logits must be a 2-D tensor of shape (batch_size, "
                         f"num_classes), got shape {shape}")
    if isinstance(num_samples, bool) or not isinstance(num_samples, (int, np.integer)) or \
            num_samples < 1:
        raise ValueError(f"{what}: num_samples must be a positive integer, got "
                         f"{num_samples!r}")
    dtype = check_dtype(dtype, "iu", what, "int32")

    def build(seed, counter, logits):
        rows = O.expand_dims(logits, 1)                                   # (batch, 1, classes)
        noise_like = O.less(rows, np.zeros((1, int(num_samples), 1), logits.dtype))
        u = O.random_uniform(noise_like, seed, counter)
        gumbel = O.log(O.log(u) * np.float32(-1.0)) * np.float32(-1.0)
        return O.cast(O.argmax(O.cast(rows, np.float32) + gumbel, axis=-1), dtype)
    return sample(what, build, [logits], seed, (int(num_samples), dtype.str))
