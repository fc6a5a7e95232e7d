"""CIFAR-10 (Krizhevsky, 2009): 32x32 colour images of 10 classes, 50,000 for training and
10,000 for testing, as ``keras.datasets.cifar10.load_data()`` gives them::

    import hiapi
    (x_train, y_train), (x_test, y_test) = hiapi.datasets.cifar10.load_data()
    x_train.shape, y_train.shape      # (50000, 32, 32, 3), (50000, 1), both uint8
    CLASS_NAMES[y_train[0, 0]]        # 'frog'

It is *not* bundled with hiapi (the archive is 163 MB). ``cifar-10-python.tar.gz``, the
authors' "python version", is found through ``path``, ``HIAPI_DATA_DIR`` (its ``cifar-10/``
subfolder, or itself) or the user cache, or else downloaded once from ``MIRROR`` into the cache
and checked against the sha256 Keras publishes; ``hiapi.datasets.fetch`` gives the details.
The batches inside are read straight from the archive. They are Python pickles, which can run
code when loaded, so they are read with an unpickler that builds numpy arrays and nothing else.

Source: https://www.cs.toronto.edu/~kriz/cifar.html (Alex Krizhevsky, "Learning Multiple
Layers of Features from Tiny Images", 2009).
"""
from __future__ import annotations

import codecs
import os
import pickle
import tarfile

import numpy as np

from hiapi.datasets.fetch import locate
from hiapi.datasets.mnist import Splits
from hiapi.runtime.settings import image_data_format

#: base URL the archive is downloaded from when no local copy exists
MIRROR = "https://www.cs.toronto.edu/~kriz/"

#: file name -> sha256 (the one Keras's ``cifar10.load_data`` checks)
FILES = {"cifar-10-python.tar.gz":
         "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce"}

#: the archive's batches: five for training, one for testing
TRAIN_BATCHES = tuple(f"cifar-10-batches-py/data_batch_{i}" for i in range(1, 6))
TEST_BATCH = "cifar-10-batches-py/test_batch"

#: label -> name, as published with the data
CLASS_NAMES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship",
               "truck")


def load_data(path: str | os.PathLike[str] | None = None, *, mirror: str = MIRROR) -> Splits:
    """CIFAR-10 as ``(x_train, y_train), (x_test, y_test)``, uint8 numpy arrays of shapes
    (50000, 32, 32, 3), (50000, 1), (10000, 32, 32, 3), (10000, 1) (images (n, 3, 32, 32) when
    ``image_data_format()`` is ``"channels_first"``, as in Keras); labels index ``CLASS_NAMES``.

    ``path``: a folder holding ``cifar-10-python.tar.gz``, searched first. Keras's
    ``load_data()`` takes no argument; this one is the same call plus an optional folder.
    """
    (archive,) = locate("cifar-10", FILES, mirror, path, bundled_dir=None)
    with tarfile.open(archive, "r:gz") as tar:
        x_train, y_train = _join([read_batch(tar, name) for name in TRAIN_BATCHES])
        x_test, y_test = read_batch(tar, TEST_BATCH)
    if image_data_format() == "channels_last":
        x_train, x_test = x_train.transpose(0, 2, 3, 1), x_test.transpose(0, 2, 3, 1)
    return (x_train, y_train), (x_test, y_test)


def read_batch(tar, name):
    """One batch of the archive: images (n, 3, 32, 32) and labels (n, 1), both uint8."""
    try:
        member = tar.extractfile(name)
    except KeyError:
        member = None
    if member is None:
        raise ValueError(f"{tar.name}: no file {name!r} in the archive; is it "
                         f"cifar-10-python.tar.gz?")
    with member:
        batch = _ArraysOnly(member, encoding="bytes").load()
    data, labels = batch.get(b"data"), batch.get(b"labels")
    if not isinstance(data, np.ndarray) or data.dtype != np.uint8 or data.ndim != 2 or \
            data.shape[1] != 3 * 32 * 32 or labels is None or len(labels) != len(data):
        raise ValueError(f"{tar.name}: {name!r} is not a CIFAR-10 batch (expected b'data', "
                         f"uint8 of shape (n, 3072), and n b'labels'; got data "
                         f"{getattr(data, 'dtype', type(data).__name__)} "
                         f"{getattr(data, 'shape', '')}, "
                         f"{'no' if labels is None else len(labels)} labels)")
    labels = np.asarray(labels)
    if labels.size and (labels.min() < 0 or labels.max() >= len(CLASS_NAMES)):
        raise ValueError(f"{tar.name}: {name!r} has labels outside 0..9")
    return data.reshape(-1, 3, 32, 32), labels.astype(np.uint8).reshape(-1, 1)


def _join(batches):
    return (np.concatenate([x for x, _ in batches]), np.concatenate([y for _, y in batches]))


#: the function numpy's array pickles call (``numpy.core.multiarray._reconstruct`` in numpy 1,
#: ``numpy._core...`` in numpy 2), taken from an array so neither module is imported by name
_RECONSTRUCT = np.empty(0).__reduce__()[0]


class _ArraysOnly(pickle.Unpickler):
    """Unpickles dicts, lists, strings, bytes and numbers, and numpy arrays: the globals a
    CIFAR batch names. Any other global (which could run code) is refused."""

    _ALLOWED = {("numpy.core.multiarray", "_reconstruct"): _RECONSTRUCT,
                ("numpy._core.multiarray", "_reconstruct"): _RECONSTRUCT,
                ("numpy", "ndarray"): np.ndarray, ("numpy", "dtype"): np.dtype,
                ("_codecs", "encode"): codecs.encode}   # bytes in a protocol-2 pickle

    def find_class(self, module, name):
        found = self._ALLOWED.get((module, name))
        if found is None:
            raise pickle.UnpicklingError(f"a CIFAR-10 batch names {module}.{name}, which is "
                                         f"not part of a numpy array; refused (the file is not "
                                         f"the authors')")
        return found
