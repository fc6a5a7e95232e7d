"""The numba backend: fused elementwise programs compiled to one loop agree with numpy, are
cached on disk, and fall back to the numpy kernels where they do not apply. (The whole op,
layer and model suite also runs under HIAPI_BACKEND=numba in CI.)"""
import numpy as np
import pytest

import hiapi
from hiapi.graph import Function, ops, placeholder

numba = pytest.importorskip("numba", reason="the numba extra is not installed")


@pytest.fixture
def numba_backend():
    previous = hiapi.backends.get_backend().name
    yield hiapi.backends.set_backend("numba")
    hiapi.backends.set_backend(previous)


def build():
    x = placeholder((None, 300), "float32")
    return x, ops.where(x > 0.5, ops.sigmoid(ops.tanh(x * 2.0 + 1.0) * x), -ops.relu(x) / 3.0)


def test_fused_program_compiles_to_one_loop_and_matches_numpy(numba_backend, tmp_path,
                                                              monkeypatch):
    monkeypatch.setenv("HIAPI_CACHE_DIR", str(tmp_path))
    from hiapi.backends.numba_backend import fused
    fused._compiled.clear()
    x, y = build()
    values = np.random.default_rng(0).normal(size=(64, 300)).astype(np.float32)
    f = Function([x], y)
    got = f(values)
    executable = next(iter(f._executables.values()))
    assert [v.op.name for v in executable.order if not v.op.is_source] == ["fused_elementwise"]
    assert fused._compiled and list((tmp_path / "numba").glob("fused_*.py"))
    hiapi.backends.set_backend("numpy")
    expected = Function([x], y)(values)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)


def test_trailing_and_per_row_broadcasts_compile_and_other_broadcasts_fall_back(numba_backend):
    from hiapi.backends.numba_backend import fused
    x, b = placeholder((None, 4), "float64"), placeholder((4,), "float64")
    column = placeholder((None, 1), "float64")          # one value per row: softmax's max
    f = Function([x, b, column], [ops.exp(x + b) * 2.0, ops.relu(x - column) * b])
    values = [np.arange(12.0).reshape(3, 4) / 7, np.arange(4.0), np.arange(3.0)[:, None]]
    fused._compiled.clear()
    bias, centred = f(*values)
    np.testing.assert_allclose(bias, np.exp(values[0] + values[1]) * 2.0)
    np.testing.assert_allclose(centred, np.maximum(values[0] - values[2], 0) * values[1])
    modes = sorted(key[2] for key in fused._compiled)
    assert modes == [("full", "per_row", "trailing"), ("full", "trailing", "scalar")]
    # a middle axis broadcast, and a per-row value beside a bias spanning two axes: on numpy
    x3, middle = placeholder((None, 3, 4), "float64"), placeholder((3, 1), "float64")
    rows, plane = placeholder((None, 3, 1), "float64"), placeholder((3, 4), "float64")
    values = [np.arange(24.0).reshape(2, 3, 4), np.arange(3.0)[:, None],
              np.arange(6.0).reshape(2, 3, 1), np.ones((3, 4)) * 0.5]
    fused._compiled.clear()
    got = Function([x3, middle, rows, plane],
                   [ops.tanh(x3 - middle), ops.tanh(x3 * plane - rows)])(*values)
    np.testing.assert_allclose(got[0], np.tanh(values[0] - values[1]), rtol=1e-14)
    np.testing.assert_allclose(got[1], np.tanh(values[0] * values[3] - values[2]), rtol=1e-14)
    assert not fused._compiled


def test_unknown_backend_still_lists_numba():
    with pytest.raises(ValueError, match="numba, numpy"):
        hiapi.backends.set_backend("jax")


def test_threads_follow_omp_num_threads_unless_numba_num_threads_is_set():
    import os
    import subprocess
    import sys
    script = ("import hiapi, numba; hiapi.backends.set_backend('numba'); "
              "print(numba.get_num_threads())")
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_NUM_THREADS",)}
    out = subprocess.run([sys.executable, "-c", script], env={**env, "OMP_NUM_THREADS": "1"},
                         capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split()[-1] == "1"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env={**env, "OMP_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "2"},
                         timeout=120, check=True)
    assert out.stdout.split()[-1] == "2"


def test_trailing_inputs_of_different_lengths_read_by_column(numba_backend):
    from hiapi.backends.numba_backend import fused
    x = placeholder((None, 3, 4), "float64")
    plane, row = placeholder((3, 4), "float64"), placeholder((4,), "float64")
    values = [np.arange(24.0).reshape(2, 3, 4), np.ones((3, 4)) * 0.5, np.arange(4.0)]
    fused._compiled.clear()
    got = Function([x, plane, row], ops.tanh(x * plane - row))(*values)
    np.testing.assert_allclose(got, np.tanh(values[0] * values[1] - values[2]), rtol=1e-14)
    assert [key[2] for key in fused._compiled] == [("full", "trailing", "trailing_shorter")]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sparse_cross_entropy_loop_matches_numpy_and_checks_labels(dtype):
    from hiapi.backends.numba_backend import backend as numba_kernels
    from hiapi.backends.numpy_backend import backend as numpy_kernels
    rng = np.random.default_rng(0)
    logits = (rng.normal(size=(2, 128, 10)) * 30).astype(dtype)     # large: the shift matters
    labels = rng.integers(0, 10, (2, 128))
    got, expected = np.empty((2, 128), dtype), np.empty((2, 128), dtype)
    numba_kernels.kernels["sparse_softmax_cross_entropy"](got, logits, labels)
    numpy_kernels.kernels["sparse_softmax_cross_entropy"](expected, logits, labels)
    np.testing.assert_allclose(got, expected, rtol=2e-6 if dtype == np.float32 else 1e-13,
                               atol=1e-6 if dtype == np.float32 else 1e-13)
    labels[1, 7] = 10
    with pytest.raises(ValueError, match="label 10 is outside the 10 classes"):
        numba_kernels.kernels["sparse_softmax_cross_entropy"](got, logits, labels)


def test_sparse_cross_entropy_loop_leaves_float16_and_short_labels_to_numpy(monkeypatch):
    """float16 has no numba arithmetic; labels shorter than the rows (a batch the graph left
    unknown) would be read past their end by the loop, where numpy's kernel raises."""
    from hiapi.backends.numba_backend import backend as numba_kernels, cross_entropy
    from hiapi.backends.numpy_backend import backend as numpy_kernels
    monkeypatch.setattr(cross_entropy, "_rows", lambda *args: pytest.fail("the loop ran"))
    rng = np.random.default_rng(1)
    logits, labels = rng.normal(size=(8, 10)).astype(np.float16), rng.integers(0, 10, 8)
    got, expected = np.empty(8, np.float16), np.empty(8, np.float16)
    numba_kernels.kernels["sparse_softmax_cross_entropy"](got, logits, labels)
    numpy_kernels.kernels["sparse_softmax_cross_entropy"](expected, logits, labels)
    np.testing.assert_array_equal(got, expected)
    short = rng.integers(0, 10, 5)
    with pytest.raises(Exception) as numba_error:
        numba_kernels.kernels["sparse_softmax_cross_entropy"](
            np.empty(8, np.float32), logits.astype(np.float32), short)
    with pytest.raises(Exception) as numpy_error:
        numpy_kernels.kernels["sparse_softmax_cross_entropy"](
            np.empty(8, np.float32), logits.astype(np.float32), short)
    assert type(numba_error.value) is type(numpy_error.value)


def test_a_loop_run_in_place_reads_its_input_as_the_output(numba_backend):
    """An optimizer's update writes the weight's own memory: that input is read as out[i]
    (LLVM vectorises the loop only then) and the weights equal the numpy backend's bits."""
    from hiapi.backends.numba_backend import fused

    def train(backend):
        hiapi.backends.set_backend(backend)
        hiapi.utils.set_random_seed(3)
        model = hiapi.Sequential([hiapi.Input((40,)), hiapi.layers.Dense(30, activation="relu"),
                                  hiapi.layers.Dense(5)])
        model.compile(optimizer="adam", loss=hiapi.losses.SparseCategoricalCrossentropy(
            from_logits=True))
        rng = np.random.default_rng(0)
        x, y = rng.normal(size=(64, 40)).astype(np.float32), rng.integers(0, 5, 64)
        for _ in range(3):
            model.train_on_batch(x, y)
        return model.get_weights()

    fused._compiled.clear()
    got = train("numba")
    assert any(fused.IN_PLACE in key[2] for key in fused._compiled)
    for a, b in zip(got, train("numpy")):
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "bool"])
def test_one_hot_loop_matches_numpys_kernel(dtype):
    from hiapi.backends.numba_backend.registry import backend as numba_kernels
    from hiapi.backends.numpy_backend import backend as numpy_kernels
    labels = np.random.default_rng(0).integers(0, 10, (4, 8))
    expected, out = np.full((4, 8, 10), 7, dtype), np.full((4, 8, 10), 7, dtype)
    numpy_kernels.kernels["one_hot"](expected, labels, depth=10, dtype=np.dtype(dtype))
    numba_kernels.kernels["one_hot"](out, labels, depth=10, dtype=np.dtype(dtype))
    np.testing.assert_array_equal(out, expected)
    assert out.sum() == labels.size


def test_one_hot_loop_leaves_indices_outside_the_depth_to_numpys_kernel():
    from hiapi.backends.numba_backend.registry import backend as numba_kernels
    from hiapi.backends.numpy_backend import backend as numpy_kernels
    negative = np.array([0, -1, 2])                 # numpy's kernel counts -1 from the end
    expected, out = np.empty((3, 4), np.float32), np.empty((3, 4), np.float32)
    numpy_kernels.kernels["one_hot"](expected, negative, depth=4, dtype=np.dtype("float32"))
    numba_kernels.kernels["one_hot"](out, negative, depth=4, dtype=np.dtype("float32"))
    np.testing.assert_array_equal(out, expected)
    with pytest.raises(IndexError):
        numba_kernels.kernels["one_hot"](out[:2], np.array([0, 4]), depth=4,
                                         dtype=np.dtype("float32"))


def test_a_node_called_with_a_new_input_of_another_dtype_reuses_its_loop(numba_backend):
    """A fed batch (labels) is a new array at every call: the node's last loop and views are
    kept and only that input is put in; one of the output's dtype (it could be the output's
    memory) or another shape takes the full path. Values are right either way."""
    from hiapi.backends.numba_backend import fused
    labels = placeholder((None,), "int64")
    scores = placeholder((None,), "float32")
    f = Function([scores, labels], ops.cast(ops.equal(ops.cast(scores, "int64"), labels),
                                            "float32") * 2.0)
    rng = np.random.default_rng(1)
    s = rng.integers(0, 3, 32).astype(np.float32)
    calls = []
    original = fused._rebound
    try:
        fused._rebound = lambda *a: calls.append(original(*a)) or calls[-1]
        for n in (32, 32, 32, 7, 7):
            y = rng.integers(0, 3, n)
            got = f(s[:n].copy() if n == 7 else s, y)
            np.testing.assert_array_equal(got, (s[:n].astype(np.int64) == y) * 2.0)
    finally:
        fused._rebound = original
    assert any(c is not None for c in calls)          # labels changed, the loop was kept
    assert any(c is None for c in calls)              # scores changed too: the full path


def test_a_loop_divides_by_zero_as_numpy_does(numba_backend):
    """inf and NaN from a division by zero (and 0 to a negative power), as the numpy backend
    gives them: numba's default error model raised ZeroDivisionError out of the step."""
    x, y = placeholder((None, 4), "float32"), placeholder((None, 4), "float32")
    built = [ops.exp(x) / (y * 2.0), ops.power(y, -1.0), (x - x) / y]
    values = [np.ones((2, 4), np.float32),
              np.array([[0, 1, -2, 0], [3, 0, -5, 4]], np.float32)]
    f = Function([x, y], built)
    got = f(*values)
    executable = next(iter(f._executables.values()))
    assert "fused_elementwise" in [v.op.name for v in executable.order]
    hiapi.backends.set_backend("numpy")
    expected = Function([x, y], built)(*values)
    assert np.isinf(got[0]).any() and np.isinf(got[1]).any() and np.isnan(got[2]).any()
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, rtol=1e-6, equal_nan=True)
