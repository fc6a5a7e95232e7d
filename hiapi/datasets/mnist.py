"""MNIST handwritten digits (LeCun, Cortes & Burges; CC BY-SA 3.0).

    (x_train, y_train), (x_test, y_test) = hiapi.datasets.mnist.load_data()
    x_train.shape, x_train.dtype    # (60000, 28, 28) uint8

hiapi bundles the original files, so this works offline. Unlike Keras, whose ``path`` names an
``.npz`` inside its cache, ``path`` here is a folder holding the four IDX ``.gz`` files.
"""
from hiapi.datasets.fetch import locate
from hiapi.datasets.idx import read_idx

MIRROR = "https://storage.googleapis.com/cvdf-datasets/mnist/"
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


def load_data(path=None, mirror=MIRROR):
    """``(x_train, y_train), (x_test, y_test)``: uint8 arrays (60000, 28, 28), (60000,),
    (10000, 28, 28), (10000,)."""
    x_train, y_train, x_test, y_test = (read_idx(p) for p in
                                        locate("mnist", FILES, mirror, path))
    return (x_train, y_train), (x_test, y_test)
