"""Fashion-MNIST (Xiao, Rasul & Vollgraf, Zalando Research 2017; MIT licence).

    (x_train, y_train), (x_test, y_test) = hiapi.datasets.fashion_mnist.load_data()

Not bundled with hiapi: the files are found through ``path`` (a folder with the four IDX
``.gz`` files), ``HIAPI_DATA_DIR``, or the user cache, or downloaded once from the canonical
mirror and checked against the published sha256.
"""
from hiapi.datasets.fetch import locate
from hiapi.datasets.idx import read_idx

MIRROR = "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"
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


def load_data(path=None, mirror=MIRROR):
    """``(x_train, y_train), (x_test, y_test)`` as uint8 arrays, as for MNIST."""
    x_train, y_train, x_test, y_test = (read_idx(p) for p in
                                        locate("fashion-mnist", FILES, mirror, path,
                                               bundled=False))
    return (x_train, y_train), (x_test, y_test)
