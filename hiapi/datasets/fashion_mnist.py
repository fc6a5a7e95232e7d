"""Fashion-MNIST (Zalando Research): 28x28 grey images of 10 kinds of clothing, a harder drop-in
replacement for MNIST with the same file names, shapes and splits (60,000 / 10,000).

    import hiapi
    (x_train, y_train), (x_test, y_test) = hiapi.datasets.fashion_mnist.load_data()
    CLASS_NAMES[y_train[0]]     # 'Ankle boot'

It is *not* bundled with hiapi (about 30 MB). The files are found through ``path``,
``HIAPI_DATA_DIR`` or the user cache, or else downloaded once from ``MIRROR`` into the cache and
checked against the published sha256; ``hiapi.datasets.fetch`` gives the details.

Licence: MIT, Copyright (c) 2017 Zalando SE, https://github.com/zalandoresearch/fashion-mnist
(Xiao, Rasul & Vollgraf, "Fashion-MNIST: a Novel Image Dataset for Benchmarking Machine
Learning Algorithms", 2017).
"""
from __future__ import annotations

import os

from hiapi.datasets.fetch import locate
from hiapi.datasets.idx import read_idx
from hiapi.datasets.mnist import SHAPES, Splits

#: base URL the files are downloaded from when no local copy exists
MIRROR = "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"

#: file name -> published sha256, in the order load_data returns them
FILES = {
    "train-images-idx3-ubyte.gz":
        "3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84",
    "train-labels-idx1-ubyte.gz":
        "a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845",
    "t10k-images-idx3-ubyte.gz":
        "346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073",
    "t10k-labels-idx1-ubyte.gz":
        "67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5",
}

#: label -> name, as published by Zalando
CLASS_NAMES = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
               "Sneaker", "Bag", "Ankle boot")


def load_data(path: str | os.PathLike[str] | None = None, *, mirror: str = MIRROR) -> Splits:
    """Fashion-MNIST as ``(x_train, y_train), (x_test, y_test)``, uint8 numpy arrays of shapes
    (60000, 28, 28), (60000,), (10000, 28, 28), (10000,); labels index ``CLASS_NAMES``.

    ``path``: a folder holding the four IDX ``.gz`` files (same names as MNIST's), searched
    first. Keras's ``fashion_mnist.load_data()`` takes no argument; this one is the same call
    plus an optional folder. Then ``HIAPI_DATA_DIR`` (its ``fashion-mnist/`` subfolder, or
    itself), the user cache and a verified download from ``mirror`` are tried.
    """
    paths = locate("fashion-mnist", FILES, mirror, path, bundled_dir=None)
    x_train, y_train, x_test, y_test = (read_idx(p, shape) for p, shape in zip(paths, SHAPES))
    return (x_train, y_train), (x_test, y_test)
