"""Helpers with Keras's names: seeding, label encoding, padding sequences, sessions, model
plots, the serialization API (``keras.utils`` exports it too), datasets from folders of images
or text and from time series, image files."""
from __future__ import annotations

import numpy as np

from hiapi.hints import ArrayLike
from hiapi.runtime import random_streams as _random
from hiapi.utils.data_structures import pack_x_y_sample_weight, unpack_x_y_sample_weight
from hiapi.utils.file_dataset import FileDataset
from hiapi.utils.image_dataset import image_dataset_from_directory
from hiapi.utils.image_utils import array_to_img, img_to_array, load_img, save_img
from hiapi.utils.naming import clear_session
from hiapi.utils.plot_model import model_to_dot, plot_model
from hiapi.utils.py_dataset import PyDataset, Sequence
from hiapi.utils.sequence_utils import pad_sequences
from hiapi.utils.serialization import (CustomObjectScope, custom_object_scope,  # noqa: F401
                                       deserialize_keras_object, get_custom_objects,
                                       get_registered_name, get_registered_object,
                                       register_keras_serializable, serialize_keras_object)
from hiapi.utils.text_dataset import text_dataset_from_directory
from hiapi.utils.timeseries_dataset import timeseries_dataset_from_array


def set_random_seed(seed: int) -> None:
    """Seed every random choice hiapi makes (initial weights, shuffling), as
    ``keras.utils.set_random_seed`` does: two runs with the same seed train identically.

    >>> hiapi.utils.set_random_seed(42)
    """
    _random.set_seed(seed)


def to_categorical(x: ArrayLike, num_classes: int | None = None) -> np.ndarray:
    """One-hot encode integer class labels: ``to_categorical([0, 2], 3)`` gives
    ``[[1, 0, 0], [0, 0, 1]]`` as float32. A trailing axis of size 1 is dropped first."""
    x = np.asarray(x)
    if x.size and not np.all(np.equal(np.mod(x, 1), 0)):
        raise ValueError("to_categorical: labels must be whole numbers, got non-integer values")
    x = x.astype(np.int64)
    if x.ndim > 1 and x.shape[-1] == 1:
        x = x[..., 0]
    if num_classes is None:
        num_classes = int(x.max()) + 1 if x.size else 0
    if x.size and (x.min() < 0 or x.max() >= num_classes):
        raise ValueError(f"to_categorical: labels must lie in [0, {num_classes - 1}] for "
                         f"num_classes={num_classes}, got values from {x.min()} to {x.max()}")
    out = np.zeros(x.shape + (num_classes,), dtype=np.float32)
    np.put_along_axis(out, x[..., None], 1.0, axis=-1)
    return out
