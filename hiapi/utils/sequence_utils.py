"""``pad_sequences``: variable-length sequences to one array, as Keras's
``keras.utils.pad_sequences`` (same arguments, defaults and errors)::

    hiapi.utils.pad_sequences([[1, 2, 3], [4]], maxlen=2)   # [[2, 3], [0, 4]]
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np


def pad_sequences(sequences: Sequence[Any], maxlen: int | None = None, dtype: Any = "int32",
                  padding: str = "pre", truncating: str = "pre",
                  value: Any = 0.0) -> np.ndarray:
    """A ``(len(sequences), maxlen, ...)`` array: each sequence cut to its last (``truncating=
    "pre"``) or first (``"post"``) ``maxlen`` steps and filled with ``value`` before
    (``padding="pre"``) or after it. ``maxlen`` defaults to the longest; a step may be an
    array itself (all of one shape)."""
    if padding not in ("pre", "post"):
        raise ValueError(f"pad_sequences: padding must be 'pre' or 'post', got {padding!r}")
    if truncating not in ("pre", "post"):
        raise ValueError(f"pad_sequences: truncating must be 'pre' or 'post', got "
                         f"{truncating!r}")
    if not hasattr(sequences, "__len__"):
        raise ValueError(f"pad_sequences: sequences must be a list of sequences, got "
                         f"{type(sequences).__name__}")
    lengths, sample_shape = [], None
    for index, sequence in enumerate(sequences):
        if not hasattr(sequence, "__len__"):
            raise ValueError(f"pad_sequences: sequences must be a list of iterables; the one "
                             f"at position {index} is {sequence!r}")
        lengths.append(len(sequence))
        if sample_shape is None and len(sequence):
            sample_shape = np.asarray(sequence).shape[1:]
    sample_shape = sample_shape or ()
    if maxlen is None:
        maxlen = max(lengths, default=0)
    text_dtype = np.issubdtype(np.dtype(dtype), np.str_) if dtype is not object else True
    if isinstance(value, str) and not text_dtype:
        raise ValueError(f"pad_sequences: dtype {dtype} does not hold value {value!r} (a "
                         f"string); set dtype=object for variable-length strings")
    out = np.full((len(sequences), maxlen) + tuple(sample_shape), value, dtype=dtype)
    for index, sequence in enumerate(sequences):
        if not len(sequence) or not maxlen:
            continue
        kept = np.asarray(sequence[-maxlen:] if truncating == "pre" else sequence[:maxlen],
                          dtype=dtype)
        if kept.shape[1:] != tuple(sample_shape):
            raise ValueError(f"pad_sequences: the steps of the sequence at position {index} "
                             f"have shape {kept.shape[1:]}, the first non-empty one's "
                             f"{tuple(sample_shape)}")
        if padding == "post":
            out[index, :len(kept)] = kept
        else:
            out[index, -len(kept):] = kept
    return out
