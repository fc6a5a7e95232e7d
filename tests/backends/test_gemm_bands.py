"""Matrix products in fixed bands (``backends/gemm_bands.py``): the bands come from the shape alone,
the product equals numpy's, and 1 and 2 threads give the same bits, kernel by kernel and over
whole seeded training runs on both CPU backends."""
import numpy as np
import pytest

import hiapi
from hiapi import config
from hiapi.runtime import thread_tuner, threads
from hiapi.backends import (blas_batch, chunk_workers, gemm_bands, k_pieces, thread_invariance,
                            threaded_blocks)


@pytest.mark.parametrize("m, n, k", [(128, 512, 784), (784, 512, 128), (256, 1024, 1024),
                                     (1000, 37, 300), (64, 10, 512), (3000, 3000, 4),
                                     (32, 128, 784), (32, 10, 128), (40, 60, 4096)])
def test_bands_cover_the_longer_side_in_a_power_of_two_of_equal_pieces(m, n, k):
    axis, bounds = gemm_bands.band_plan(m, n, k)
    side = (m, n)[axis]
    assert side == max(m, n)
    assert bounds[0][0] == 0 and bounds[-1][1] == side
    assert all(stop == start for (_, stop), (start, _) in zip(bounds, bounds[1:]))
    sizes = [stop - start for start, stop in bounds]
    assert all(size % 16 == 0 for size in sizes[:-1]) and sizes[-1] <= sizes[0]
    assert len(bounds) & (len(bounds) - 1) == 0 and len(bounds) <= gemm_bands.MAX_BANDS
    if 2 * m * n * k < 2 * gemm_bands.MIN_SPLIT_FLOPS or side < 2 * gemm_bands.NARROW_BAND:
        assert len(bounds) == 1                 # too small to share: whole, one thread
    elif side < 2 * gemm_bands.MIN_BAND:
        assert len(bounds) == 2                 # narrow: in two (batch 32's products)
    else:
        assert all(size >= gemm_bands.MIN_BAND for size in sizes[:-1])


def test_the_first_layer_of_the_mnist_mlp_is_shared():
    assert len(gemm_bands.band_plan(128, 512, 784)[1]) == 2
    assert len(gemm_bands.band_plan(784, 512, 128)[1]) == 2


pytestmark = pytest.mark.usefixtures("blas_count_restored")


def _operands(rng, a_shape, b_shape, dtype=np.float32, transpose=""):
    a = rng.standard_normal(a_shape[::-1] if "a" in transpose else a_shape).astype(dtype)
    b = rng.standard_normal(b_shape[::-1] if "b" in transpose else b_shape).astype(dtype)
    return (a.T if "a" in transpose else a), (b.T if "b" in transpose else b)


@pytest.mark.parametrize("a_shape, b_shape, transpose", [
    ((128, 784), (784, 512), ""), ((784, 128), (128, 512), "a"), ((128, 512), (512, 784), "b"),
    ((600, 300), (300, 20), ""), ((5, 3), (3, 4), ""),
    ((4, 64, 300), (300, 600), ""), ((2, 1, 70, 300), (3, 300, 600), ""), ((0, 5), (5, 3), "")])
def test_equals_numpys_matmul(a_shape, b_shape, transpose):
    a, b = _operands(np.random.default_rng(0), a_shape, b_shape, transpose=transpose)
    expected = np.matmul(a.astype(np.float64), b.astype(np.float64))
    out = np.empty(expected.shape, np.float32)
    gemm_bands.matmul(out, a, b)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-3)


def test_integers_too():
    a = np.arange(600 * 300).reshape(600, 300) % 7
    b = np.arange(300 * 520).reshape(300, 520) % 5
    out = np.empty((600, 520), a.dtype)
    gemm_bands.matmul(out, a, b)
    np.testing.assert_array_equal(out, a @ b)


def _on(count, monkeypatch, calls):
    """Products as the tuner runs them at ``count`` threads: bands enabled, BLAS's own count
    set to ``count`` (restored by ``blas_count_restored``), and every banded run recorded in ``calls``
    (on the chunk workers or in one batched BLAS call)."""
    monkeypatch.setattr(gemm_bands, "_enabled", True)
    monkeypatch.setattr(chunk_workers.threads, "active_threads", lambda: count)
    for lib in chunk_workers.workers.blas_libraries():
        lib.set_num_threads(count)
    blas_batch.available()          # found (and its binding checked) before calls are counted
    real_run, real_batch = chunk_workers.ChunkWorkers.run, blas_batch.Batch.__call__

    def counting(self, tasks, job, workers):
        calls.append(workers)
        return real_run(self, tasks, job, workers)

    checking, real_agreed = [], thread_invariance.agreed

    def batched(self, out, a, b, alpha=1.0, beta=0.0):     # on BLAS's threads: as many
        if not checking:                                    # not the batched call's check
            calls.append(chunk_workers.workers.blas_libraries()[0].num_threads)
        return real_batch(self, out, a, b, alpha, beta)

    def agreed(*args):
        checking.append(1)
        try:
            return real_agreed(*args)
        finally:
            checking.pop()
    monkeypatch.setattr(chunk_workers.ChunkWorkers, "run", counting)
    monkeypatch.setattr(blas_batch.Batch, "__call__", batched)
    monkeypatch.setattr(thread_invariance, "agreed", agreed)


# the products of a Dense layer 784 -> 512 at batch 128: forward, input and kernel gradients
MLP_PRODUCTS = [((128, 784), (784, 512), ""), ((128, 512), (512, 784), "b"),
                ((784, 128), (128, 512), "a"), ((4, 128, 784), (784, 512), ""),
                ((256, 1024), (1024, 1024), ""), ((1024, 256), (256, 1024), "a")]


@pytest.mark.parametrize("a_shape, b_shape, transpose", MLP_PRODUCTS)
def test_one_and_two_threads_give_the_same_bits(a_shape, b_shape, transpose, monkeypatch):
    """Whole on BLAS's threads where that was checked to change no bit, or whole on two and in
    the threaded driver's blocks on one, else cut along k where the pieces were, else in bands
    on hiapi's: the same bits every way."""
    a, b = _operands(np.random.default_rng(1), a_shape, b_shape, transpose=transpose)
    results = []
    for count in (1, 2):
        calls = []
        _on(count, monkeypatch, calls)
        out = np.empty(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2],
                                                                          b.shape[-1]), a.dtype)
        gemm_bands.matmul(out, a, b)
        results.append(out)
        on_blas = a.ndim == 2 and (thread_invariance.known(a, b) or
                                   threaded_blocks.known(a, b, 0.0) or k_pieces.known(a, b, 0.0))
        assert calls == ([] if on_blas else [count])    # bands: the second run used two
    np.testing.assert_array_equal(results[0], results[1])


def _exact(out, a, b):
    """A product whose bits follow nothing but its operands (float64 rounded to float32):
    OpenBLAS's own float32 bits change with the count for every ``k`` on some machines (its
    Haswell kernels on an AMD EPYC), for some ``k`` only on others."""
    out[...] = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)


def _count_dependent(out, a, b):
    """A product whose last bits follow BLAS's thread count, as OpenBLAS's do for some k."""
    np.matmul(a, b, out=out)
    out += np.float32(1e-6) * chunk_workers.workers.blas_libraries()[0].num_threads


def test_a_product_whose_bits_follow_the_count_runs_in_bands_and_one_that_does_not_whole(
        monkeypatch):
    if not chunk_workers.workers.blas_libraries():
        pytest.skip("no BLAS library that threadpoolctl controls")
    monkeypatch.setattr(thread_invariance, "_verdicts", {})
    monkeypatch.setattr(gemm_bands, "_routes", {})
    monkeypatch.setattr(threads, "budget", lambda: threads.Budget(2, 2, 1, "test"))
    rng = np.random.default_rng(5)
    for product, a_shape, whole in ((_count_dependent, (256, 300), False),
                                    (_exact, (256, 301), True)):
        a, b = _operands(rng, a_shape, (a_shape[1], 512))
        calls = []
        _on(2, monkeypatch, calls)
        out = np.empty((256, 512), np.float32)
        gemm_bands.run(out, a, b, product)
        assert thread_invariance.known(a, b) is whole
        assert calls == ([] if whole else [2])
    assert chunk_workers.workers.blas_libraries()[0].num_threads == 2    # the check restores


def _piece_dependent_above(limit):
    """A piece product (``out = a @ b + beta * out``) whose last bits follow BLAS's thread
    count when its ``k`` is longer than ``limit``, as OpenBLAS's do for some ``k``."""
    def piece(out, a, b, beta):
        product = np.empty(out.shape, np.float32)
        _exact(product, a, b)
        out[...] = product if beta == 0 else beta * out + product   # no out read at beta 0
        if a.shape[1] > limit:
            out += np.float32(1e-6) * chunk_workers.workers.blas_libraries()[0].num_threads
    return piece


@pytest.mark.parametrize("limit, bounds", [
    (512, ((0, 512), (512, 784))),
    (256, ((0, 256), (256, 512), (512, 768), (768, 784))),      # each failing piece cut again
    (10, None)])            # a k of 16 already changes bits: no cut can help, bands
def test_a_product_that_depends_on_the_count_is_cut_along_k_into_pieces_that_do_not(
        limit, bounds, monkeypatch):
    if not chunk_workers.workers.blas_libraries():
        pytest.skip("no BLAS library that threadpoolctl controls")
    monkeypatch.setattr(thread_invariance, "_verdicts", {})
    monkeypatch.setattr(gemm_bands, "_routes", {})
    monkeypatch.setattr(k_pieces, "_cuts", {})
    monkeypatch.setattr(threaded_blocks, "_found", {})
    monkeypatch.setattr(threads, "budget", lambda: threads.Budget(2, 2, 1, "test"))
    piece = _piece_dependent_above(limit)
    a, b = _operands(np.random.default_rng(6), (256, 784), (784, 512))
    results = []
    for count in (1, 2):
        calls = []
        _on(count, monkeypatch, calls)
        out = np.empty((256, 512), np.float32)
        gemm_bands.run(out, a, b, lambda part, a_part, b_part: piece(part, a_part, b_part, 0.0),
                       piece)
        results.append(out)
        assert thread_invariance.known(a, b) is False
        assert (k_pieces.known(a, b, 0.0) or None) == bounds   # False: not searched
        assert calls == ([] if bounds else [count])     # no cut passed: bands
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_allclose(results[0], a @ b, rtol=1e-4, atol=1e-3)


def test_pieces_after_the_first_add_to_it_and_the_first_keeps_the_callers_beta(monkeypatch):
    """The ``gemm`` op's ``alpha * a @ b + beta * c`` cut along k: the formula holds."""
    from hiapi.backends.numpy_backend import backend
    monkeypatch.setattr(thread_invariance, "_verdicts", {})
    monkeypatch.setattr(gemm_bands, "_routes", {})
    monkeypatch.setattr(k_pieces, "_cuts", {})
    monkeypatch.setattr(thread_invariance, "_check", lambda out, a, b, product, libraries:
                        a.shape[1] <= 512)      # as if k = 784 depended on the count
    monkeypatch.setattr(threaded_blocks, "_found", {})
    monkeypatch.setattr(threaded_blocks, "CANDIDATE_Q", ())     # and no blocks replayed it
    monkeypatch.setattr(gemm_bands, "_cuts_can_help", lambda out, a, b, product: True)
    _on(2, monkeypatch, [])
    rng = np.random.default_rng(7)
    x, w = _operands(rng, (256, 784), (784, 512))
    c = rng.standard_normal((256, 512)).astype(np.float32)
    out = np.empty_like(c)
    backend.kernels["gemm"](out, x, w, c, -0.1, 0.9)
    assert k_pieces.known(x, w, 0.9) == ((0, 512), (512, 784))
    np.testing.assert_allclose(out, 0.9 * c - 0.1 * (x @ w), rtol=1e-4, atol=1e-4)


def test_blas_runs_on_one_thread_inside_and_gets_its_threads_back(monkeypatch):
    monkeypatch.setattr(gemm_bands, "_enabled", True)
    blas = chunk_workers.workers.blas_libraries()
    if not blas:
        pytest.skip("no BLAS library that threadpoolctl controls")
    before = [lib.num_threads for lib in blas]
    seen = []
    real = gemm_bands._band
    try:
        gemm_bands._band = lambda piece, slot: (seen.append(blas[0].num_threads), real(piece, slot))
        out = np.empty((4, 128, 512), np.float32)       # leading dimensions: always bands
        gemm_bands.matmul(out, *_operands(np.random.default_rng(2), (4, 128, 784), (784, 512)))
    finally:
        gemm_bands._band = real
    assert seen and set(seen) == {1}
    assert [lib.num_threads for lib in blas] == before


def _train(backend, workload, count, monkeypatch):
    """Weights after three seeded steps with ``count`` threads, the count fit's thread tuner
    picks (its only candidate), as under load."""
    previous = hiapi.backends.get_backend().name
    hiapi.backends.set_backend(backend)
    monkeypatch.setattr(thread_tuner, "candidates", lambda budget: [count])
    try:
        hiapi.utils.set_random_seed(7)
        if workload == "mlp":      # examples/mnist_mlp.py's layers
            inputs, body = (784,), [hiapi.layers.Dense(512, activation="relu")]
        else:
            inputs, body = (14, 14, 3), [hiapi.layers.Conv2D(32, 3, activation="relu"),
                                         hiapi.layers.Conv2D(32, 3, activation="relu"),  # Winograd
                                         hiapi.layers.MaxPooling2D(), hiapi.layers.Flatten()]
        model = hiapi.Sequential([hiapi.Input(inputs)] + body + [hiapi.layers.Dense(10)])
        model.compile(optimizer=hiapi.optimizers.SGD(0.1, momentum=0.9),
                      loss=hiapi.losses.SparseCategoricalCrossentropy(from_logits=True))
        rng = np.random.default_rng(0)
        x = rng.random((384, *inputs)).astype(np.float32)
        model.fit(x, rng.integers(0, 10, 384), batch_size=128, epochs=1, verbose=0)
        return [w.copy() for w in model.get_weights()]
    finally:
        hiapi.backends.set_backend(previous)


@pytest.mark.parametrize("workload", ["mlp", "convnet"])
@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_seeded_training_gives_the_same_weights_on_one_and_two_threads(backend, workload,
                                                                       monkeypatch):
    if backend == "numba":
        pytest.importorskip("numba", reason="the numba extra is not installed")
    if not threads.adaptive():
        pytest.skip("fit's thread tuner is off here (a budget of one thread, or fixed)")
    one, two = _train(backend, workload, 1, monkeypatch), _train(backend, workload, 2, monkeypatch)
    assert gemm_bands.enabled()
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, b)


def test_with_the_count_fixed_products_go_whole_to_blas(monkeypatch):
    """No tuner, no bands: OpenBLAS's own threads (deterministic at a fixed count, faster,
    and every core of a large machine)."""
    monkeypatch.setattr(gemm_bands, "_enabled", False)
    seen = []
    monkeypatch.setattr(gemm_bands, "_band", lambda piece, slot: seen.append(piece))
    a, b = _operands(np.random.default_rng(3), (128, 784), (784, 512))
    out = np.empty((128, 512), np.float32)
    config.set_num_threads(2)
    try:
        hiapi.utils.set_random_seed(0)
        model = hiapi.Sequential([hiapi.Input((784,)), hiapi.layers.Dense(10)])
        model.compile(optimizer="sgd", loss="mse")
        model.fit(a, np.zeros((128, 10), np.float32), epochs=1, verbose=0)
    finally:
        config.set_num_threads(None)
    assert not gemm_bands.enabled()
    gemm_bands.matmul(out, a, b)
    assert seen == []
    np.testing.assert_array_equal(out, a @ b)



def test_the_gemm_ops_kernel_runs_in_the_same_bands(monkeypatch):
    """``out = alpha * x.T @ g + beta * c`` (the SGD update folded into the weight gradient):
    the formula, and the same bits on 1 and 2 threads."""
    from hiapi.backends.numpy_backend import backend
    rng = np.random.default_rng(4)
    x, g = _operands(rng, (784, 128), (128, 512), transpose="a")
    c = rng.standard_normal((784, 512)).astype(np.float32)
    results = []
    for count in (1, 2):
        calls = []
        _on(count, monkeypatch, calls)
        out = np.empty_like(c)
        backend.kernels["gemm"](out, x, g, c, -0.1, 0.9)
        results.append(out)
        on_blas = thread_invariance.known(x, g) or threaded_blocks.known(x, g, 0.9) or \
            k_pieces.known(x, g, 0.9)
        assert calls == ([] if on_blas else [count])
    np.testing.assert_allclose(results[0], 0.9 * c - 0.1 * (x @ g), rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(results[0], results[1])


def test_a_route_is_decided_once_per_layout_and_kept_only_when_final(monkeypatch):
    """Bands, like whole products, go straight to their route on later calls (deciding cost
    ~45 us a product); not a decision taken while a worker held BLAS at one thread (its checks
    were put off), nor one for operands that share memory."""
    monkeypatch.setattr(gemm_bands, "_enabled", True)
    monkeypatch.setattr(gemm_bands, "_routes", {})
    monkeypatch.setattr(gemm_bands, "_whole_is_invariant", lambda *args: False)
    monkeypatch.setattr(gemm_bands, "_along_k", lambda *args: None)
    decided = []
    real = gemm_bands._decide
    monkeypatch.setattr(gemm_bands, "_decide", lambda *args: decided.append(1) or real(*args))
    a, b = _operands(np.random.default_rng(6), (256, 512), (512, 1024))
    out = np.empty((256, 1024), np.float32)
    for _ in range(3):
        gemm_bands.matmul(out, a, b)
    assert len(decided) == 1
    [(kind, batch)] = gemm_bands._routes.values()
    assert kind == gemm_bands.BANDS
    assert isinstance(batch, blas_batch.Batch) == blas_batch.available()   # one BLAS call
    np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-4)
    gemm_bands.matmul(out, np.asfortranarray(a), b)          # another layout: decided again
    assert len(decided) == 2
    square = np.random.default_rng(7).standard_normal((512, 512)).astype(np.float32)
    for _ in range(2):                                      # shares memory: every call
        gemm_bands.matmul(np.empty((512, 512), np.float32), square, square.T)
    assert len(decided) == 4
    monkeypatch.setattr(gemm_bands, "_routes", {})
    workers = chunk_workers.workers
    workers.single_threaded_blas_begin()
    try:
        gemm_bands.matmul(out, a, b)
    finally:
        workers.single_threaded_blas_end()
    assert gemm_bands._routes == {}


def test_a_batched_call_whose_bits_follow_the_count_is_not_used(monkeypatch):
    """The batched call's bits are checked once per layout, as a whole product's are: where
    they follow BLAS's count (another BLAS's batch may split a band), the chunk workers run
    the bands, with the same bits on 1 and 2 threads."""
    if not blas_batch.available():
        pytest.skip("numpy's BLAS has no batched GEMM")
    monkeypatch.setattr(thread_invariance, "_verdicts", {})
    monkeypatch.setattr(gemm_bands, "_routes", {})
    monkeypatch.setattr(gemm_bands, "_whole_is_invariant", lambda *args: False)
    monkeypatch.setattr(gemm_bands, "_along_k", lambda *args: None)
    real = blas_batch.prepare

    def count_dependent(*args):
        batch = real(*args)

        def run(out, a, b, alpha=1.0, beta=0.0):
            batch(out, a, b, alpha, beta)
            out += np.float32(1e-6) * chunk_workers.workers.blas_libraries()[0].num_threads
        return run
    monkeypatch.setattr(blas_batch, "prepare", count_dependent)
    a, b = _operands(np.random.default_rng(8), (256, 784), (784, 512))
    results = []
    for count in (1, 2):
        calls = []
        _on(count, monkeypatch, calls)
        out = np.empty((256, 512), np.float32)
        gemm_bands.matmul(out, a, b)
        results.append(out)
        assert calls == [count]                         # on the chunk workers
        assert list(gemm_bands._routes.values()) == [(gemm_bands.BANDS, None)]
    assert thread_invariance.known(a, b, gemm_bands.BATCHED) is False
    np.testing.assert_array_equal(results[0], results[1])
