"""The mask of an eagerly computed layer output, where Keras users look for it::

    embedded = layers.Embedding(50, 4, mask_zero=True)(np.array([[3, 1, 0, 0]]))
    embedded._keras_mask            # array([[ True,  True, False, False]])

A layer called on arrays returns arrays; when the output has a mask (from
``Embedding(mask_zero=True)``, ``Masking``, or passed on from the input) the array is a
``MaskedOutput``, a numpy array with that mask as ``_keras_mask``. Calling another layer on it
eagerly passes the mask on, as Keras does with its tensors. Arrays computed from it by numpy
are plain again (the mask described this output, not what numpy made of it).
"""
import numpy as np


class MaskedOutput(np.ndarray):
    """A numpy array carrying the boolean mask Keras attaches to a layer's output."""
    _keras_mask = None


def with_mask(array, mask):
    if mask is None:
        return array
    out = np.asarray(array).view(MaskedOutput)
    out._keras_mask = np.asarray(mask)
    return out


def mask_of(array):
    return getattr(array, "_keras_mask", None) if isinstance(array, MaskedOutput) else None
