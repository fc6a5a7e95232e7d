"""A product's fixed bands in one call of BLAS's batched GEMM (``backends/blas_batch.py``): the
result is ``alpha * a @ b + beta * out``, every band has the bits of its own serial BLAS call
on 1 thread and on 2, and a band small enough for OpenBLAS's crashing small-matrix route is
refused."""
import threading

import numpy as np
import pytest

from hiapi.backends import blas, blas_batch, chunk_workers

pytestmark = [pytest.mark.skipif(not blas_batch.available(),
                                 reason="numpy's BLAS has no batched GEMM (not OpenBLAS >= 0.3.27)"),
              pytest.mark.usefixtures("blas_count_restored")]


def _operands(rng, m, n, k, dtype, transpose):
    a = rng.standard_normal((k, m) if "a" in transpose else (m, k)).astype(dtype)
    b = rng.standard_normal((n, k) if "b" in transpose else (k, n)).astype(dtype)
    return (a.T if "a" in transpose else a), (b.T if "b" in transpose else b)


def _blas_threads(count):
    for lib in chunk_workers.workers.blas_libraries():
        lib.set_num_threads(count)


CASES = [(256, 1024, 784, 1, ""), (784, 128, 32, 0, "a"), (32, 784, 128, 1, "b"),
         (600, 96, 300, 0, "ab")]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m, n, k, axis, transpose", CASES)
def test_each_band_has_its_serial_calls_bits_on_one_thread_and_two(m, n, k, axis, transpose,
                                                                    dtype):
    a, b = _operands(np.random.default_rng(0), m, n, k, dtype, transpose)
    start = np.random.default_rng(1).standard_normal((m, n)).astype(dtype)
    side = (m, n)[axis]
    bounds = ((0, side // 2), (side // 2, side))
    batch = blas_batch.prepare(start, a, b, axis, bounds)
    assert batch is not None
    serial = start.copy()
    _blas_threads(1)
    for lo, hi in bounds:                    # the bands as the chunk workers ran them
        if axis == 0:
            blas.gemm(serial[lo:hi], a[lo:hi], b, -0.5, 0.75)
        else:
            blas.gemm(serial[:, lo:hi], a, b[:, lo:hi], -0.5, 0.75)
    for count in (1, 2):
        _blas_threads(count)
        out = start.copy()
        batch(out, a, b, -0.5, 0.75)
        np.testing.assert_array_equal(out, serial)
    expected = 0.75 * start.astype(np.float64) - 0.5 * (a.astype(np.float64) @ b)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-3)


def test_bands_of_at_most_a_million_multiply_adds_are_refused():
    """OpenBLAS's batched interface sends those to its small-matrix kernels, through a table
    offset it calls as an address in numpy's DYNAMIC_ARCH build: a segmentation fault."""
    a, b = np.ones((100, 100), np.float32), np.ones((100, 200), np.float32)
    out = np.empty((100, 200), np.float32)
    assert blas_batch.prepare(out, a, b, 1, ((0, 100), (100, 200))) is None    # 100^3 each
    wider = np.ones((101, 200), np.float32)
    assert blas_batch.prepare(out, a, b, 1, ((0, 101), (101, 200))) is None    # the second
    out = np.empty((101, 200), np.float32)
    assert blas_batch.prepare(out, wider, np.ones((200, 200), np.float32), 1,
                              ((0, 100), (100, 200))) is not None


def test_what_blas_cannot_read_is_refused():
    ints = np.ones((512, 512), np.int64)
    assert blas_batch.prepare(ints, ints, ints, 0, ((0, 256), (256, 512))) is None
    strided = np.ones((512, 1024), np.float32)[:, ::2]
    out = np.empty((512, 512), np.float32)
    assert blas_batch.prepare(out, strided, strided, 0, ((0, 256), (256, 512))) is None


def test_new_operands_of_the_same_layout_and_changed_contents_are_seen():
    """The pointers of the last operands are kept with them: another array of the layout, or
    the same array with new values, gives its own product."""
    rng = np.random.default_rng(2)
    a, b = _operands(rng, 256, 512, 300, np.float32, "")
    out = np.empty((256, 512), np.float32)
    batch = blas_batch.prepare(out, a, b, 1, ((0, 256), (256, 512)))
    batch(out, a, b)
    np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-4)
    a[...] = rng.standard_normal(a.shape)
    batch(out, a, b)
    np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-4)
    other = rng.standard_normal(a.shape).astype(np.float32)
    batch(out, other, b, 2.0)
    np.testing.assert_allclose(out, 2 * (other @ b), rtol=1e-5, atol=1e-4)


def test_one_batch_called_from_two_threads_at_once():
    """The conv chunks' products share layouts, so one ``Batch`` may run on two threads."""
    rng = np.random.default_rng(3)
    b = rng.standard_normal((300, 512)).astype(np.float32)
    inputs = [rng.standard_normal((256, 300)).astype(np.float32) for _ in range(2)]
    outs = [np.empty((256, 512), np.float32) for _ in range(2)]
    batch = blas_batch.prepare(outs[0], inputs[0], b, 1, ((0, 256), (256, 512)))
    failures = []

    def work(i):
        for _ in range(50):
            outs[i][...] = 0
            batch(outs[i], inputs[i], b)
            if not np.allclose(outs[i], inputs[i] @ b, rtol=1e-5, atol=1e-4):
                failures.append(i)
    workers = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert not failures


def test_operands_of_another_layout_are_refused_with_the_strides():
    """A ``Batch`` holds leading dimensions and offsets for one layout: another would make BLAS
    read outside the arrays, so it is an error, not a wrong product."""
    a, b = _operands(np.random.default_rng(4), 256, 512, 300, np.float32, "")
    out = np.empty((256, 512), np.float32)
    batch = blas_batch.prepare(out, a, b, 1, ((0, 256), (256, 512)))
    wider = np.empty((256, 600), np.float32)[:, :300]
    with pytest.raises(ValueError, match=r"strides .*given \(2400, 4\)"):
        batch(out, wider, b)


def test_a_batch_does_not_keep_its_last_operands_alive():
    """Routes are kept for the process: a deleted model's weights and buffers must go."""
    import gc
    import weakref
    a, b = _operands(np.random.default_rng(5), 256, 512, 300, np.float32, "")
    out = np.empty((256, 512), np.float32)
    batch = blas_batch.prepare(out, a, b, 1, ((0, 256), (256, 512)))
    batch(out, a, b)
    batch(out, a, b)                                    # the kept pointers, again
    np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-4)
    gone = [weakref.ref(x) for x in (a, b, out)]
    del a, b, out
    gc.collect()
    assert all(ref() is None for ref in gone)
