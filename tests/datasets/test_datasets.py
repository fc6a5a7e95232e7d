"""hiapi.datasets on the real files: the bundled MNIST against its published statistics,
Fashion-MNIST through HIAPI_DATA_DIR, the search order, verified atomic downloads from a
file:// mirror, and the rejection of truncated or foreign files."""
import doctest
import gzip
import hashlib
import struct
from pathlib import Path

import numpy as np
import pytest

from hiapi.datasets import fashion_mnist, fetch, idx, mnist

# /work/main/tests/datasets/this.py -> /work/shared/data (read-only, verified copies)
SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
BUNDLED_MNIST = fetch.BUNDLED_DIR / "mnist"
LABEL_FILES = {f: d for f, d in mnist.FILES.items() if "labels" in f}   # small: fast downloads


def needs_shared_fashion():
    if not (SHARED_DATA / "fashion-mnist").is_dir():
        pytest.skip(f"Fashion-MNIST is not bundled and {SHARED_DATA / 'fashion-mnist'} "
                    f"does not exist")


@pytest.fixture(scope="module")
def mnist_data():
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("HIAPI_DATA_DIR", raising=False)    # so the bundled copy is what loads
        assert fetch.locate("mnist", mnist.FILES, mnist.MIRROR)[0].parent == BUNDLED_MNIST
        return mnist.load_data()


@pytest.fixture(scope="module")
def fashion_data():
    needs_shared_fashion()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HIAPI_DATA_DIR", str(SHARED_DATA))
        mp.setenv("HIAPI_CACHE_DIR", "/nonexistent/hiapi-cache")   # must not be needed
        return fashion_mnist.load_data(mirror="file:///nonexistent/mirror/")


@pytest.fixture
def isolated(monkeypatch, tmp_path):
    """No HIAPI_DATA_DIR and an empty cache under tmp_path."""
    monkeypatch.delenv("HIAPI_DATA_DIR", raising=False)
    monkeypatch.setenv("HIAPI_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def link_files(folder, names, source=BUNDLED_MNIST):
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).symlink_to(source / name)
    return folder


def write_idx(path, array, magic=None, extra=b""):
    array = np.asarray(array, dtype=np.uint8)
    magic = magic if magic is not None else (0x0803 if array.ndim == 3 else 0x0801)
    header = struct.pack(">I", magic) + struct.pack(f">{array.ndim}I", *array.shape)
    with gzip.open(path, "wb") as handle:
        handle.write(header + array.tobytes() + extra)
    return path


# --- the real data ------------------------------------------------------------------------

def test_bundled_mnist_matches_the_published_statistics(mnist_data):
    (x_train, y_train), (x_test, y_test) = mnist_data
    assert x_train.shape == (60000, 28, 28) and y_train.shape == (60000,)
    assert x_test.shape == (10000, 28, 28) and y_test.shape == (10000,)
    assert {a.dtype for a in (x_train, y_train, x_test, y_test)} == {np.dtype(np.uint8)}
    assert np.bincount(y_train).tolist() == [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265,
                                             5851, 5949]
    assert np.bincount(y_test).tolist() == [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974,
                                            1009]
    assert x_train.mean() == pytest.approx(33.32, abs=0.005)
    assert x_test.mean() == pytest.approx(33.79, abs=0.005)
    assert x_train.flags.writeable      # like Keras: callers may normalise in place


def test_bundled_files_are_the_published_ones():
    assert sorted(p.name for p in BUNDLED_MNIST.glob("*.gz")) == sorted(mnist.FILES)
    for name, digest in mnist.FILES.items():
        assert fetch.sha256(BUNDLED_MNIST / name) == digest, name
    if (SHARED_DATA / "mnist").is_dir():
        for name in mnist.FILES:
            shared = SHARED_DATA / "mnist" / name
            assert (BUNDLED_MNIST / name).read_bytes() == shared.read_bytes(), name


def test_mnist_docstring_example_runs():
    result = doctest.testmod(mnist, raise_on_error=False)
    assert result.attempted >= 3 and result.failed == 0


def test_fashion_mnist_through_data_dir(fashion_data):
    (x_train, y_train), (x_test, y_test) = fashion_data
    assert x_train.shape == (60000, 28, 28) and x_test.shape == (10000, 28, 28)
    assert x_train.dtype == y_train.dtype == np.uint8
    assert np.bincount(y_train).tolist() == [6000] * 10
    assert np.bincount(y_test).tolist() == [1000] * 10
    assert x_train.mean() == pytest.approx(72.94, abs=0.005)
    assert fashion_mnist.CLASS_NAMES[y_train[0]] == "Ankle boot"


def test_fashion_mnist_is_not_bundled():
    assert not (fetch.BUNDLED_DIR / "fashion-mnist").exists()


# --- bad files ----------------------------------------------------------------------------

def test_a_valid_small_file_round_trips(tmp_path):
    array = np.arange(24).reshape(2, 3, 4)
    np.testing.assert_array_equal(idx.read_idx(write_idx(tmp_path / "a.gz", array)), array)
    labels = idx.read_idx(write_idx(tmp_path / "l.gz", [3, 1, 4]), shape=(3,))
    assert labels.tolist() == [3, 1, 4] and labels.dtype == np.uint8


def test_truncated_gzip_is_rejected_naming_the_file(tmp_path):
    cut = tmp_path / "t10k-labels-idx1-ubyte.gz"
    cut.write_bytes((BUNDLED_MNIST / cut.name).read_bytes()[:3000])     # half a download
    with pytest.raises(ValueError, match="not a complete, valid gzip file") as error:
        idx.read_idx(cut)
    assert str(cut) in str(error.value)


def test_corrupt_gzip_crc_is_rejected(tmp_path):
    good = (BUNDLED_MNIST / "t10k-labels-idx1-ubyte.gz").read_bytes()
    bad = tmp_path / "crc.gz"
    bad.write_bytes(good[:-8] + bytes([good[-8] ^ 0xFF]) + good[-7:])   # flip a CRC32 byte
    with pytest.raises(ValueError, match="not a complete, valid gzip file"):
        idx.read_idx(bad)


def test_a_payload_shorter_or_longer_than_the_header_is_rejected(tmp_path):
    payload = gzip.decompress((BUNDLED_MNIST / "t10k-labels-idx1-ubyte.gz").read_bytes())
    short = tmp_path / "short.gz"
    short.write_bytes(gzip.compress(payload[:-1]))                   # valid gzip, 1 byte less
    with pytest.raises(ValueError, match=r"shape \(10000,\).*10000 bytes.*holds 9999 bytes"):
        idx.read_idx(short)
    with pytest.raises(ValueError, match="more bytes than that"):
        idx.read_idx(write_idx(tmp_path / "long.gz", [1, 2], extra=b"\0"))
    header_only = tmp_path / "header.gz"
    header_only.write_bytes(gzip.compress(payload[:6]))
    with pytest.raises(ValueError, match="header ends after 6 bytes, expected 8"):
        idx.read_idx(header_only)


def test_wrong_magic_number_is_rejected(tmp_path):
    with pytest.raises(ValueError, match="magic number 0x00000d03, expected 0x00000801"):
        idx.read_idx(write_idx(tmp_path / "float.gz", np.zeros((1, 2, 2)), magic=0x0D03))
    foreign = tmp_path / "foreign.gz"
    foreign.write_bytes(gzip.compress(b"PK\x03\x04 a zip, not an IDX file"))
    with pytest.raises(ValueError, match=f"{foreign}: magic number 0x504b0304"):
        idx.read_idx(foreign)
    plain = tmp_path / "plain.idx"                               # IDX but not gzip-compressed
    plain.write_bytes(gzip.decompress(write_idx(tmp_path / "x.gz", [1]).read_bytes()))
    with pytest.raises(ValueError, match="not a complete, valid gzip file"):
        idx.read_idx(plain)


def test_unexpected_shape_is_rejected_and_missing_file_is_not_a_format_error(tmp_path):
    images = BUNDLED_MNIST / "t10k-images-idx3-ubyte.gz"
    with pytest.raises(ValueError, match=r"says shape \(10000, 28, 28\), expected "
                                         r"\(60000, 28, 28\)"):
        idx.read_idx(images, shape=(60000, 28, 28))
    with pytest.raises(FileNotFoundError):
        idx.read_idx(tmp_path / "absent.gz")


def test_swapped_files_in_a_user_folder_are_caught_by_shape(tmp_path):
    folder = tmp_path / "swapped"
    folder.mkdir()
    for name in mnist.FILES:
        swapped = name.replace("train", "T").replace("t10k", "train").replace("T", "t10k")
        (folder / name).symlink_to(BUNDLED_MNIST / swapped)
    with pytest.raises(ValueError, match="train-images-idx3-ubyte.gz: the header says shape "
                                         r"\(10000, 28, 28\), expected \(60000, 28, 28\)"):
        mnist.load_data(path=folder)


# --- where files are found ------------------------------------------------------------------

def test_search_order(isolated, monkeypatch):
    names = list(LABEL_FILES)
    explicit = link_files(isolated / "explicit", names)
    data_dir = link_files(isolated / "data" / "mnist", names).parent
    link_files(isolated / "data", names)                            # flat layout too
    bundled = link_files(isolated / "bundle" / "mnist", names).parent
    cached = link_files(isolated / "cache" / "datasets" / "mnist", names)
    nowhere = "file:///nonexistent/mirror/"

    def found(**kwargs):
        paths = fetch.locate("mnist", LABEL_FILES, nowhere, bundled_dir=bundled, **kwargs)
        assert [p.name for p in paths] == names
        return paths[0].parent

    monkeypatch.setenv("HIAPI_DATA_DIR", str(data_dir))
    assert found(path=explicit) == explicit
    assert found(path=isolated / "empty") == data_dir / "mnist"     # falls through
    for f in names:
        (data_dir / "mnist" / f).unlink()
    assert found() == data_dir                                       # files directly in it
    (data_dir / names[0]).unlink()                                   # incomplete: skipped
    assert found() == bundled / "mnist"
    monkeypatch.delenv("HIAPI_DATA_DIR")
    assert found() == bundled / "mnist"
    (bundled / "mnist" / names[1]).unlink()
    assert found() == cached
    assert fetch.locate("mnist", LABEL_FILES, nowhere, bundled_dir=None)[0].parent == cached


def test_explicit_path_through_load_data(tmp_path, mnist_data):
    folder = link_files(tmp_path / "mine", mnist.FILES)
    (x_train, y_train), (x_test, _) = mnist.load_data(path=folder)
    np.testing.assert_array_equal(x_test, mnist_data[1][0])
    np.testing.assert_array_equal(y_train, mnist_data[0][1])


def test_nothing_found_lists_every_place_and_the_fix(isolated, monkeypatch):
    monkeypatch.setenv("HIAPI_DATA_DIR", str(isolated / "data"))
    link_files(isolated / "data", ["train-labels-idx1-ubyte.gz"])
    mirror = (isolated / "no-mirror").as_uri() + "/"
    with pytest.raises(FileNotFoundError) as error:
        fashion_mnist.load_data(path=isolated / "mine", mirror=mirror)
    message = str(error.value)
    for place in (isolated / "mine", isolated / "data" / "fashion-mnist", isolated / "data",
                  isolated / "cache" / "datasets" / "fashion-mnist", mirror):
        assert str(place) in message
    assert "missing train-images-idx3-ubyte.gz, t10k-images" in message   # the partial folder
    assert "HIAPI_DATA_DIR" in message and "path=" in message


# --- downloads ------------------------------------------------------------------------------

def test_download_from_a_file_mirror_is_verified_and_cached(isolated):
    mirror = BUNDLED_MNIST.as_uri()                      # no trailing slash: added by locate
    paths = fetch.locate("mnist", mnist.FILES, mirror, bundled_dir=None)
    cache = isolated / "cache" / "datasets" / "mnist"
    assert paths == [cache / f for f in mnist.FILES]
    assert sorted(p.name for p in cache.iterdir()) == sorted(mnist.FILES)    # no temporaries
    for path, digest in zip(paths, mnist.FILES.values()):
        assert not path.is_symlink() and hashlib.sha256(path.read_bytes()).hexdigest() == digest
    # a second call finds the cache and needs no mirror
    assert fetch.locate("mnist", mnist.FILES, "file:///nonexistent/", bundled_dir=None) == paths


def test_fashion_mnist_downloads_through_load_data(isolated, fashion_data):
    needs_shared_fashion()
    mirror = (SHARED_DATA / "fashion-mnist").as_uri() + "/"
    (x_train, y_train), (x_test, y_test) = fashion_mnist.load_data(mirror=mirror)
    cache = isolated / "cache" / "datasets" / "fashion-mnist"
    assert {p.name: fetch.sha256(p) for p in cache.iterdir()} == fashion_mnist.FILES
    np.testing.assert_array_equal(y_train, fashion_data[0][1])
    np.testing.assert_array_equal(x_test, fashion_data[1][0])


def test_a_corrupted_mirror_file_raises_and_leaves_nothing_behind(isolated):
    mirror = isolated / "mirror"
    mirror.mkdir()
    first, second = LABEL_FILES
    (mirror / first).write_bytes((BUNDLED_MNIST / first).read_bytes())
    tampered = bytearray((BUNDLED_MNIST / second).read_bytes())
    tampered[100] ^= 1
    (mirror / second).write_bytes(tampered)
    with pytest.raises(FileNotFoundError, match="sha256 [0-9a-f]{64} does not match the "
                                                f"published {LABEL_FILES[second]}") as error:
        fetch.locate("mnist", LABEL_FILES, mirror.as_uri() + "/", bundled_dir=None)
    assert "HIAPI_DATA_DIR" in str(error.value) and "path=" in str(error.value)
    assert isinstance(error.value.__cause__, ValueError)
    cache = isolated / "cache" / "datasets" / "mnist"
    assert [p.name for p in cache.iterdir()] == [first]     # the verified one; no partial file
    assert fetch.sha256(cache / first) == LABEL_FILES[first]


def test_a_truncated_mirror_file_is_discarded_and_a_bad_cached_copy_replaced(isolated):
    mirror = isolated / "mirror"
    mirror.mkdir()
    name = "t10k-labels-idx1-ubyte.gz"
    target = isolated / "cache" / "datasets" / "mnist" / name
    (mirror / name).write_bytes((BUNDLED_MNIST / name).read_bytes()[:1000])
    with pytest.raises(ValueError, match="does not match"):
        fetch.download((mirror / name).as_uri(), target, mnist.FILES[name])
    assert list(target.parent.iterdir()) == []
    target.write_bytes(b"stale")                  # e.g. left by an older tool: re-fetched
    assert fetch.download((BUNDLED_MNIST / name).as_uri(), target, mnist.FILES[name]) == target
    assert target.read_bytes() == (BUNDLED_MNIST / name).read_bytes()
    assert list(target.parent.iterdir()) == [target]


# --- CIFAR-10, from an archive laid out as the authors' (the real one is 163 MB) ------------
def write_cifar_archive(path, sizes=(3, 2, 2, 2, 2), test_size=4, protocol=2, batch=None):
    """A ``cifar-10-python.tar.gz`` with the real member names and pickled dicts; returns the
    images (n, 3, 32, 32) and labels it holds, training batches first."""
    import io
    import pickle
    import tarfile
    rng = np.random.default_rng(7)
    images, labels = [], []
    with tarfile.open(path, "w:gz") as tar:
        for name, n in [(f"data_batch_{i}", s) for i, s in enumerate(sizes, 1)] + \
                [("test_batch", test_size)]:
            data = rng.integers(0, 256, size=(n, 3072), dtype=np.uint8)
            label = [int(v) for v in rng.integers(0, 10, size=n)]
            images.append(data.reshape(n, 3, 32, 32))
            labels.append(np.array(label, np.uint8).reshape(n, 1))
            content = batch if batch is not None and name == "test_batch" else \
                {b"batch_label": b"x", b"data": data, b"labels": label,
                 b"filenames": [b"f.png"] * n}
            blob = pickle.dumps(content, protocol=protocol)
            info = tarfile.TarInfo(f"cifar-10-batches-py/{name}")
            info.size = len(blob)
            tar.addfile(info, io.BytesIO(blob))
    return images, labels


@pytest.mark.parametrize("protocol", [2, 4])
def test_cifar10_reads_the_archive_as_keras_returns_it(tmp_path, protocol):
    from hiapi.datasets import cifar10
    images, labels = write_cifar_archive(tmp_path / "cifar-10-python.tar.gz", protocol=protocol)
    (x_train, y_train), (x_test, y_test) = cifar10.load_data(
        path=tmp_path, mirror="file:///nonexistent/mirror/")
    assert x_train.shape == (11, 32, 32, 3) and y_train.shape == (11, 1)
    assert x_test.shape == (4, 32, 32, 3) and y_test.shape == (4, 1)
    assert {a.dtype for a in (x_train, y_train, x_test, y_test)} == {np.dtype(np.uint8)}
    np.testing.assert_array_equal(x_train, np.concatenate(images[:5]).transpose(0, 2, 3, 1))
    np.testing.assert_array_equal(y_train, np.concatenate(labels[:5]))
    np.testing.assert_array_equal(x_test[..., 0], images[5][:, 0])      # the red plane
    np.testing.assert_array_equal(y_test, labels[5])
    import hiapi
    hiapi.config.set_image_data_format("channels_first")
    try:
        (first, _), _ = cifar10.load_data(path=tmp_path, mirror="file:///nonexistent/mirror/")
    finally:
        hiapi.config.set_image_data_format("channels_last")
    np.testing.assert_array_equal(first, np.concatenate(images[:5]))


def test_cifar10_refuses_a_pickle_that_is_not_arrays(tmp_path):
    import os
    import pickle

    class Payload:
        def __reduce__(self):
            return (os.system, ("echo never",))

    from hiapi.datasets import cifar10
    write_cifar_archive(tmp_path / "cifar-10-python.tar.gz", batch={b"data": Payload()})
    with pytest.raises(pickle.UnpicklingError, match="posix.system|os.system|nt.system"):
        cifar10.load_data(path=tmp_path, mirror="file:///nonexistent/mirror/")
    write_cifar_archive(tmp_path / "cifar-10-python.tar.gz",
                        batch={b"data": np.zeros((2, 10), np.uint8), b"labels": [0, 1]})
    with pytest.raises(ValueError, match="test_batch' is not a CIFAR-10 batch"):
        cifar10.load_data(path=tmp_path, mirror="file:///nonexistent/mirror/")


def test_cifar10_downloads_through_the_fetch_path(isolated):
    from hiapi.datasets import cifar10
    mirror = isolated / "mirror"
    mirror.mkdir()
    write_cifar_archive(mirror / "cifar-10-python.tar.gz")
    digest = fetch.sha256(mirror / "cifar-10-python.tar.gz")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cifar10, "FILES", {"cifar-10-python.tar.gz": digest})
        (x_train, _), _ = cifar10.load_data(mirror=mirror.as_uri() + "/")
    assert x_train.shape == (11, 32, 32, 3)
    assert (fetch.cache_folder("cifar-10") / "cifar-10-python.tar.gz").is_file()
    with pytest.raises(FileNotFoundError, match="cifar-10"):    # the published digest differs
        (isolated / "cache").rename(isolated / "elsewhere")
        cifar10.load_data(mirror=mirror.as_uri() + "/")
