"""MNIST handwritten digits: 60,000 training and 10,000 test images, 28x28 grey levels, 10 classes.

>>> import hiapi
>>> (x_train, y_train), (x_test, y_test) = hiapi.datasets.mnist.load_data()
>>> x_train.shape, x_train.dtype, y_test.shape
((60000, 28, 28), dtype('uint8'), (10000,))

hiapi bundles the four original IDX files (``hiapi/datasets/data/mnist/``), so this works
offline; ``hiapi.datasets.fetch`` describes where else the files are looked for.

Licence: the MNIST database is by Yann LeCun and Corinna Cortes (with Christopher J.C. Burges),
http://yann.lecun.com/exdb/mnist/, made available under the Creative Commons
Attribution-Share Alike 3.0 licence (CC BY-SA 3.0).
"""
from __future__ import annotations

import os

import numpy as np

from hiapi.datasets.fetch import locate
from hiapi.datasets.idx import read_idx

#: base URL the files are downloaded from when no local copy exists
MIRROR = "https://storage.googleapis.com/cvdf-datasets/mnist/"

#: file name -> published sha256, in the order load_data returns them
FILES = {
    "train-images-idx3-ubyte.gz":
        "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609",
    "train-labels-idx1-ubyte.gz":
        "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c",
    "t10k-images-idx3-ubyte.gz":
        "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6",
    "t10k-labels-idx1-ubyte.gz":
        "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6",
}

#: decoded shapes of FILES, same order (Fashion-MNIST shares them)
SHAPES = ((60000, 28, 28), (60000,), (10000, 28, 28), (10000,))


#: what ``load_data`` returns: ``(x_train, y_train), (x_test, y_test)``
Splits = tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


def load_data(path: str | os.PathLike[str] | None = None, *, mirror: str = MIRROR) -> Splits:
    """MNIST as ``(x_train, y_train), (x_test, y_test)``, uint8 numpy arrays of shapes
    (60000, 28, 28), (60000,), (10000, 28, 28), (10000,); pixels 0..255, labels 0..9.

    ``path``: a folder holding ``train-images-idx3-ubyte.gz``, ``train-labels-idx1-ubyte.gz``,
    ``t10k-images-idx3-ubyte.gz`` and ``t10k-labels-idx1-ubyte.gz``, searched first. This
    differs from Keras, whose ``keras.datasets.mnist.load_data(path="mnist.npz")`` names an
    ``.npz`` file inside its cache; hiapi reads the original IDX files instead. When ``path``
    is None or lacks the files, ``HIAPI_DATA_DIR``, the bundled copy, the user cache and (last)
    a verified download from ``mirror`` are tried.
    """
    paths = locate("mnist", FILES, mirror, path)
    x_train, y_train, x_test, y_test = (read_idx(p, shape) for p, shape in zip(paths, SHAPES))
    return (x_train, y_train), (x_test, y_test)
