"""Arrays larger than memory (issue #31): a np.memmap or an h5py dataset passed as x trains,
evaluates and predicts like the same array in memory, read batch by batch: the process's
resident memory grows far less than the data's size."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import hiapi
from hiapi import layers
from hiapi.models.disk_array import DiskArray

h5py = pytest.importorskip("h5py")


def blobs(n=300):
    rng = np.random.default_rng(5)
    y = rng.integers(0, 3, n)
    return (rng.normal(size=(n, 6)) + y[:, None]).astype(np.float32), y


def classifier():
    hiapi.utils.set_random_seed(0)
    model = hiapi.Sequential([hiapi.Input(shape=(6,)), layers.Dense(8, activation="relu"),
                              layers.Dense(3, activation="softmax")])
    model.compile(optimizer=hiapi.optimizers.SGD(0.1), loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    return model


def on_disk(tmp_path, x, kind):
    if kind == "memmap":
        array = np.lib.format.open_memmap(tmp_path / "x.npy", "w+", x.dtype, x.shape)
        array[:] = x
        array.flush()
        return np.load(tmp_path / "x.npy", mmap_mode="r")
    handle = h5py.File(tmp_path / "x.h5", "w")
    handle["x"] = x
    return handle["x"]


@pytest.mark.parametrize("kind", ["memmap", "h5py"])
@pytest.mark.parametrize("shuffle", [True, "batch", False])
def test_disk_arrays_train_like_memory(tmp_path, kind, shuffle):
    x, y = blobs()
    results = []
    for source in (x, on_disk(tmp_path, x, kind)):
        model = classifier()
        history = model.fit(source, y, batch_size=32, epochs=2, shuffle=shuffle, verbose=0,
                            validation_split=0.2)
        results.append((model.get_weights(), history.history,
                        model.evaluate(source, y, verbose=0), model.predict(source, verbose=0)))
    (w1, h1, e1, p1), (w2, h2, e2, p2) = results
    for a, b in zip(w1, w2):
        np.testing.assert_array_equal(a, b)
    assert h1 == h2 and e1 == e2
    np.testing.assert_array_equal(p1, p2)


def test_rows_of_a_memmap_view_and_gathers(tmp_path):
    x = np.arange(60, dtype=np.float64).reshape(20, 3)
    mapped = on_disk(tmp_path, x, "memmap")
    view = DiskArray(mapped[5:])                      # a row slice of the mapping
    np.testing.assert_array_equal(np.asarray(view[2:6]), x[7:11])
    rows = np.array([9, 0, 1, 2, 14, 8])
    np.testing.assert_array_equal(view.take(rows), x[5:][rows])
    with pytest.raises(ValueError, match="C-contiguous rows"):
        DiskArray(mapped[:, 1:])


def test_resident_memory_grows_far_less_than_the_data(tmp_path):
    """A 400 MB memmap, one epoch of shuffle=True batches (every row read), in a fresh
    process: its peak resident memory grows by less than a quarter of the file."""
    rows, features = 100_000, 1000                           # float32: 400 MB
    path = tmp_path / "big.npy"
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(f"""
        import resource
        import numpy as np
        import hiapi
        from hiapi import layers
        with open({str(path)!r}, "wb") as handle:      # written in chunks, never mapped
            np.lib.format.write_array_header_1_0(handle, {{
                "descr": "<f4", "fortran_order": False, "shape": ({rows}, {features})}})
            for start in range(0, {rows}, 10_000):
                handle.write(np.full((10_000, {features}), start / 1e7, np.float32).tobytes())
        x = np.load({str(path)!r}, mmap_mode="r")
        y = (np.arange({rows}) % 2).astype(np.int64)
        model = hiapi.Sequential([hiapi.Input(shape=({features},)), layers.Dense(2)])
        model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
        model.predict(x[:64], verbose=0)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        model.fit(x, y, batch_size=1000, epochs=1, verbose=0)
        grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
        print(grown * 1024)
    """))
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    grown = int(result.stdout.split()[-1])
    print(f"peak RSS grew by {grown / 1e6:.0f} MB")
    assert grown < rows * features * 4 / 4, f"peak RSS grew by {grown / 1e6:.0f} MB"
