"""Kernels written with ndarray methods and indexing only, so numpy and cupy arrays run them
alike: the shape ops (views), the identity ops, padding and the broadcast/unbroadcast pair.
``register(backend)`` adds them to a backend's registry; the numpy and cupy backends share
them rather than keeping two copies that could drift apart."""
import numpy as np


def identity(x):
    return x


def pass_first(x, *others):
    return x


def reshape(x, shape):
    return x.reshape(shape)


def transpose(x, axes):
    return x.transpose(axes)


def expand_dims(x, axis):
    shape = list(x.shape)
    for position in axis:                 # sorted positions in the output
        shape.insert(position, 1)
    return x.reshape(shape)


def squeeze(x, axis):
    return x.squeeze(axis)


def slice_(x, bounds):
    return x[tuple(slice(start, stop) for start, stop in bounds)]


def concat_piece(g, *parts, axis, index):
    start = sum(part.shape[axis] for part in parts[:index])
    return g[(slice(None),) * axis + (slice(start, start + parts[index].shape[axis]),)]


def pad(out, x, pads):
    out[...] = 0
    out[tuple(slice(lo, lo + size) for (lo, _), size in zip(pads, x.shape))] = x


def broadcast_like(out, x, like):
    out[...] = x


def sum_like(out, g, like):
    """Sum ``g`` over the axes broadcasting stretched to reach it from ``like``'s shape."""
    lead = g.ndim - like.ndim
    stretched = tuple(lead + i for i, (d, gd) in enumerate(zip(like.shape, g.shape[lead:]))
                      if d == 1 and gd != 1)
    total = g.sum(axis=tuple(range(lead)) + stretched, keepdims=True)
    out[...] = total.reshape(out.shape)


def integral_indices(out, x, where):
    """Float class labels as integers. A label with a fraction, or not finite, is refused with
    its value: truncating it would train on the wrong class without a word."""
    with np.errstate(invalid="ignore"):           # inf % 1 is nan: refused just below
        bad = (x % 1) != 0
    if bad.any():
        value = float(x[bad].ravel()[0])
        raise ValueError(f"{where}: class labels must be whole numbers (floats such as 3.0 "
                         f"are accepted); got {value!r}")
    out[...] = x


def argsort(out, x, axis):
    out[...] = x.argsort(axis=axis)


KERNELS = {"identity": identity, "stop_gradient": identity, "custom_gradient": pass_first,
           "reshape": reshape,
           "transpose": transpose, "expand_dims": expand_dims, "squeeze": squeeze,
           "slice": slice_, "concat_piece": concat_piece, "pad": pad, "broadcast_like": broadcast_like, "sum_like": sum_like,
           "integral_indices": integral_indices, "argsort": argsort}


def register(backend):
    for name, kernel in KERNELS.items():
        backend.register(name)(kernel)
