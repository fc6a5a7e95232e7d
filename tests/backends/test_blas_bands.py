"""The numba backend's band runner (``backends/numba_backend/blas_bands.py``): the bands of a BLAS
product on spinning helpers give the chunk workers' bits on 1 and 2 threads (float32 and
float64, every layout BLAS reads, both axes, ``alpha`` and ``beta``), ``gemm_bands`` hands it
only what BLAS computes, keeps the route it decided, and the helpers' BLAS buffers are warmed
once, together."""
import numpy as np
import pytest

from hiapi.backends import blas, chunk_workers, gemm_bands

pytest.importorskip("numba")
if not blas.available():
    pytest.skip("no BLAS binding (backends/blas.py)", allow_module_level=True)
import hiapi.backends.numba_backend  # noqa: E402,F401  (registers the runner)
from hiapi.backends.numba_backend import blas_bands  # noqa: E402


def _operands(rng, m, k, n, dtype, transpose):
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    if "a" in transpose:
        a = np.ascontiguousarray(a.T).T         # columns contiguous: BLAS reads it transposed
    if "b" in transpose:
        b = np.ascontiguousarray(b.T).T
    return a, b


def _on_chunk_workers(out, a, b, alpha, beta, threads):
    pieces = [(x, y, o, lambda o_, x_, y_: blas.gemm(o_, x_, y_, alpha, beta))
              for x, y, o in gemm_bands._pieces(out, a, b)]
    chunk_workers.workers.run(pieces, gemm_bands._band, threads)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m, k, n, transpose", [
    (256, 784, 1024, ""), (1024, 256, 1024, "a"), (256, 1024, 784, "b"), (1024, 300, 64, "ab"),
    (784, 128, 600, "a")])
def test_the_chunk_workers_bits_on_one_and_two_threads(m, k, n, transpose, dtype):
    rng = np.random.default_rng(m + k + n)
    a, b = _operands(rng, m, k, n, dtype, transpose)
    start = rng.standard_normal((m, n)).astype(dtype)
    axis, bounds = gemm_bands.band_plan(m, n, k)
    assert len(bounds) > 1
    expected = start.copy()
    _on_chunk_workers(expected, a, b, -0.5, 0.9, 2)
    np.testing.assert_allclose(expected, 0.9 * start.astype(np.float64) - 0.5 * (
        a.astype(np.float64) @ b.astype(np.float64)), rtol=1e-4, atol=1e-3)
    for threads in (1, 2):
        out = start.copy()
        blas_bands.run(out, a, b, axis, bounds, -0.5, 0.9, threads)
        np.testing.assert_array_equal(out, expected)     # every band once: beta applied once


def test_the_output_outside_the_product_is_not_touched():
    """A band of columns of a wider array (a Dense layer's slice of a fused output)."""
    rng = np.random.default_rng(3)
    a, b = _operands(rng, 256, 512, 1024, np.float32, "")
    wide = np.full((256, 1536), 7.0, np.float32)
    out = wide[:, 256:1280]
    axis, bounds = gemm_bands.band_plan(256, 1024, 512)
    blas_bands.run(out, a, b, axis, bounds, 1.0, 0.0, 2)
    np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-4)
    assert (wide[:, :256] == 7).all() and (wide[:, 1280:] == 7).all()


@pytest.fixture
def _adapting(monkeypatch):
    """Bands on, nothing decided yet, every product's bits taken to follow the count (as on
    OpenBLAS's Haswell kernels), and the runner's calls recorded."""
    monkeypatch.setattr(gemm_bands, "_enabled", True)
    monkeypatch.setattr(gemm_bands, "_routes", {})
    monkeypatch.setattr(gemm_bands, "_whole_is_invariant", lambda *args: False)
    monkeypatch.setattr(gemm_bands, "_along_k", lambda *args: None)
    calls = []

    def recording(out, a, b, axis, bounds, alpha, beta, threads):
        calls.append((out.dtype, alpha, beta))
        blas_bands.run(out, a, b, axis, bounds, alpha, beta, threads)
    monkeypatch.setattr(gemm_bands, "_runner", recording)
    monkeypatch.setattr(gemm_bands.threads, "active_threads", lambda: 2)
    return calls


def test_gemm_bands_hands_the_runner_blas_products_only(_adapting):
    rng = np.random.default_rng(4)
    a, b = _operands(rng, 256, 784, 1024, np.float32, "")
    out = np.empty((256, 1024), np.float32)
    gemm_bands.matmul(out, a, b)
    np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-4)
    assert _adapting == [(np.float32, 1.0, 0.0)]
    # integers: no BLAS; a product of an array with itself: not the runner's (numpy may
    # take another BLAS routine for it); both on the chunk workers
    ints = np.arange(600 * 300).reshape(600, 300) % 7
    out_ints = np.empty((600, 600), ints.dtype)
    gemm_bands.matmul(out_ints, ints, ints.T)
    np.testing.assert_array_equal(out_ints, ints @ ints.T)
    square = rng.standard_normal((512, 512)).astype(np.float32)
    out_square = np.empty((512, 512), np.float32)
    gemm_bands.matmul(out_square, square, square.T)
    np.testing.assert_allclose(out_square, square @ square.T, rtol=1e-4, atol=1e-3)
    assert len(_adapting) == 1


def test_the_gemm_kernel_gives_the_runner_its_alpha_and_beta(_adapting):
    from hiapi.backends.numpy_backend import backend
    rng = np.random.default_rng(5)
    x, g = _operands(rng, 784, 256, 1024, np.float32, "a")
    c = rng.standard_normal((784, 1024)).astype(np.float32)
    out = np.empty_like(c)
    backend.kernels["gemm"](out, x, g, c, -0.1, 0.9)
    np.testing.assert_allclose(out, 0.9 * c - 0.1 * (x @ g), rtol=1e-4, atol=1e-4)
    assert _adapting == [(np.float32, -0.1, 0.9)]


def test_a_route_is_decided_once_per_layout(_adapting, monkeypatch):
    decided = []
    real = gemm_bands._decide
    monkeypatch.setattr(gemm_bands, "_decide", lambda *args: decided.append(1) or real(*args))
    rng = np.random.default_rng(6)
    a, b = _operands(rng, 256, 512, 1024, np.float32, "")
    out = np.empty((256, 1024), np.float32)
    for _ in range(3):
        gemm_bands.matmul(out, a, b)
    assert len(decided) == 1 and len(_adapting) == 3
    gemm_bands.matmul(out, np.asfortranarray(a), b)     # another layout: decided again
    assert len(decided) == 2


def test_the_helpers_buffers_are_warmed_once_per_count_each_thread_its_own(monkeypatch):
    """Twice a wide product dealt one per thread (the second time all run together), then
    never again in this process for that count."""
    monkeypatch.setattr(blas_bands, "_warmed", (None, 0))
    jobs = []
    real = blas_bands.helpers.run

    def recording(job, threads):
        jobs.append((job[blas_bands.DEALT], job[blas_bands.BANDS], threads))
        real(job, threads)
    monkeypatch.setattr(blas_bands.helpers, "run", recording)
    rng = np.random.default_rng(7)
    a, b = _operands(rng, 256, 512, 1024, np.float32, "")
    out = np.empty((256, 1024), np.float32)
    axis, bounds = gemm_bands.band_plan(256, 1024, 512)
    blas_bands.run(out, a, b, axis, bounds, 1.0, 0.0, 2)
    blas_bands.run(out, a, b, axis, bounds, 1.0, 0.0, 2)
    blas_bands.run(out, a, b, axis, bounds, 1.0, 0.0, 1)
    assert jobs == [(1, 2, 2), (1, 2, 2), (0, len(bounds), 2), (0, len(bounds), 2),
                    (0, len(bounds), 1)]
    m, k, n = chunk_workers.WARM_UP
    warm = np.empty((m, 2 * n), np.float32)
    ones_a, ones_b = np.ones((m, k), np.float32), np.ones((k, 2 * n), np.float32)  # kept alive:
    job = blas_bands.descriptor(warm, ones_a, ones_b, 1, ((0, n), (n, 2 * n)), 1.0, 0.0)  # addresses
    job[blas_bands.DEALT] = 1
    warm[:] = 0
    blas_bands.bands_job(job, 1)                     # dealt: thread 1 runs band 1 only
    assert (warm[:, :n] == 0).all() and (warm[:, n:] == k).all()


def test_inside_a_chunk_workers_job_the_runner_gets_one_thread(_adapting, monkeypatch):
    threads_given = []
    monkeypatch.setattr(gemm_bands, "_runner", lambda *args: threads_given.append(args[-1]))
    rng = np.random.default_rng(8)
    a, b = _operands(rng, 256, 512, 1024, np.float32, "")
    out = np.empty((256, 1024), np.float32)
    gemm_bands.matmul(out, a, b)
    chunk_workers.workers.run([0, 1], lambda task, slot: gemm_bands.matmul(out, a, b), 2)
    assert threads_given[0] == 2 and threads_given[1:] == [1, 1]
