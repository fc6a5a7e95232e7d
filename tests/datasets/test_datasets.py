"""Dataset loading from the original IDX gzip files: the bundled MNIST, Fashion-MNIST through
HIAPI_DATA_DIR, the verified download path (with a file:// mirror), and bad files."""
import gzip
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

import hiapi
from hiapi.datasets import fetch, idx, mnist

SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"


@pytest.fixture(scope="module")
def mnist_data():
    return hiapi.datasets.mnist.load_data()


def test_bundled_mnist_matches_the_published_statistics(mnist_data):
    (x_train, y_train), (x_test, y_test) = mnist_data
    assert x_train.shape == (60000, 28, 28) and x_test.shape == (10000, 28, 28)
    assert x_train.dtype == y_train.dtype == np.uint8
    assert np.bincount(y_train).tolist() == [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265,
                                             5851, 5949]
    assert np.bincount(y_test).tolist() == [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974,
                                            1009]
    assert x_train.mean() == pytest.approx(33.32, abs=0.01)
    for name, digest in mnist.FILES.items():
        assert fetch.sha256(fetch.BUNDLED / "mnist" / name) == digest


def test_fashion_mnist_through_data_dir(monkeypatch):
    if not (SHARED_DATA / "fashion-mnist").is_dir():
        pytest.skip(f"Fashion-MNIST not found at {SHARED_DATA} (it is not bundled)")
    monkeypatch.setenv("HIAPI_DATA_DIR", str(SHARED_DATA))
    (x_train, y_train), (x_test, y_test) = hiapi.datasets.fashion_mnist.load_data()
    assert x_train.shape == (60000, 28, 28) and y_test.shape == (10000,)
    assert np.bincount(y_train).tolist() == [6000] * 10
    assert x_train.mean() == pytest.approx(72.94, abs=0.01)


def write_idx(path, array):
    header = struct.pack(">I", 0x0803 if array.ndim == 3 else 0x0801) + \
        struct.pack(f">{array.ndim}I", *array.shape)
    with gzip.open(path, "wb") as handle:
        handle.write(header + array.astype(np.uint8).tobytes())


def test_truncated_and_foreign_files_are_rejected(tmp_path):
    good = tmp_path / "good.gz"
    write_idx(good, np.arange(24).reshape(2, 3, 4))
    assert idx.read_idx(good).shape == (2, 3, 4)
    short = tmp_path / "short.gz"
    with gzip.open(short, "wb") as handle:
        handle.write(gzip.decompress(good.read_bytes())[:-5])
    with pytest.raises(ValueError, match=r"header says shape \(2, 3, 4\)"):
        idx.read_idx(short)
    cut = tmp_path / "cut.gz"
    cut.write_bytes(good.read_bytes()[:20])
    with pytest.raises(ValueError, match="not a complete gzip file"):
        idx.read_idx(cut)
    foreign = tmp_path / "foreign.gz"
    with gzip.open(foreign, "wb") as handle:
        handle.write(b"PK\x03\x04 not an idx file at all")
    with pytest.raises(ValueError, match="magic number 0x504b0304"):
        idx.read_idx(foreign)


@pytest.fixture
def isolated(monkeypatch, tmp_path):
    """No data dir, an empty cache, and no bundled copy: only the download can succeed."""
    monkeypatch.delenv("HIAPI_DATA_DIR", raising=False)
    monkeypatch.setenv("HIAPI_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(fetch, "BUNDLED", tmp_path / "no-bundle")
    return tmp_path


def test_download_from_a_mirror_is_verified_and_cached(isolated):
    mirror = (Path(hiapi.datasets.__file__).parent / "data" / "mnist").as_uri() + "/"
    (x_train, y_train), _ = mnist.load_data(mirror=mirror)
    assert x_train.shape == (60000, 28, 28)
    cached = isolated / "cache" / "datasets" / "mnist"
    assert sorted(p.name for p in cached.iterdir()) == sorted(mnist.FILES)


def test_corrupted_download_leaves_nothing_behind(isolated):
    source = Path(hiapi.datasets.__file__).parent / "data" / "mnist"
    mirror = isolated / "mirror"
    shutil.copytree(source, mirror)
    (mirror / "train-labels-idx1-ubyte.gz").write_bytes(b"tampered")
    with pytest.raises(FileNotFoundError, match="sha256 .* does not match") as error:
        mnist.load_data(mirror=mirror.as_uri() + "/")
    assert "HIAPI_DATA_DIR" in str(error.value)
    cached = isolated / "cache" / "datasets" / "mnist"
    assert not (cached / "train-labels-idx1-ubyte.gz").exists()
    assert not [p for p in cached.iterdir() if p.name.startswith(".")]   # no temporaries


def test_explicit_path_wins(tmp_path, mnist_data):
    folder = tmp_path / "mine"
    folder.mkdir()
    for name in mnist.FILES:
        shutil.copy(Path(hiapi.datasets.__file__).parent / "data" / "mnist" / name, folder)
    (x, _), _ = mnist.load_data(path=folder)
    np.testing.assert_array_equal(x[:10], mnist_data[0][0][:10])
