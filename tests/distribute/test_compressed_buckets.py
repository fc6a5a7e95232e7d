"""Compressed gradients in buckets (``compressed_ops.py``): scheduled to overlap the backward
pass, equal to the per-tensor path, and the sparse allreduce that scales with ranks."""
import numpy as np
import pytest

import hiapi
from hiapi.distribute.sparse_allreduce import SparseVector
from hiapi.graph import Function, Variable, grad, ops, placeholder

from tests.distribute.mpi import run_mpi

RNG = np.random.default_rng(0)


@pytest.mark.parametrize("compression", ["topk", "dgc"])
def test_compressed_start_is_early_and_wait_is_late(compression):
    """Bucket w2 is compressed and posted before w1's gradient matmul and completed after it."""
    strategy = hiapi.distribute.Strategy(compression=compression, bucket_cap_mb=1e-5)
    x = placeholder((None, 4))
    w1 = Variable(RNG.normal(size=(4, 4)).astype(np.float32), name="w1")
    w2 = Variable(RNG.normal(size=(4, 4)).astype(np.float32), name="w2")
    loss = ops.sum(ops.tanh(ops.matmul(ops.tanh(ops.matmul(x, w1.read)), w2.read)))
    reduced = strategy.reduce_gradients(grad(loss, [w1.read, w2.read]), [w1, w2],
                                        hiapi.optimizers.SGD())
    f = Function([x] + strategy.step_inputs(), reduced)
    names = [var.op.name for var in f.executable(((3, 4), ())).order]
    starts = [i for i, n in enumerate(names) if n == "compressed_start"]
    waits = [i for i, n in enumerate(names) if n == "compressed_wait"]
    assert len(starts) == len(waits) == 2 and "compressed_allreduce" not in names
    w1_gradient_matmul = max(i for i, n in enumerate(names) if n == "matmul")
    assert starts[0] < w1_gradient_matmul < waits[0]
    assert max(starts) < min(waits)
    g1, g2 = f(RNG.normal(size=(3, 4)).astype(np.float32), 1.0)
    assert g1.shape == (4, 4) and np.count_nonzero(g1) < 16    # sparsified


def test_sparse_vector_sums_and_picks_the_cheaper_message():
    a = SparseVector.from_pairs(10, np.array([7, 2]), np.array([1.0, 2.0], np.float32))
    b = SparseVector.from_pairs(10, np.array([2, 5]), np.array([0.5, 3.0], np.float32))
    total = a + b
    np.testing.assert_array_equal(total.indices, [2, 5, 7])
    np.testing.assert_array_equal(total.to_dense(), [0, 0, 2.5, 0, 0, 3, 0, 1, 0, 0])
    assert a.message()[0] != SparseVector(10, dense=np.zeros(10, np.float32)).message()[0]
    crowded = SparseVector.from_pairs(10, np.arange(6), np.ones(6, np.float32))
    assert (crowded + b).dense is not None        # 7 pairs of 8 bytes > 10 floats: dense


def test_unsuitable_sparse_exchange_is_refused():
    with pytest.raises(ValueError, match="sparse_allreduce.*pairs.*'qsgd'"):
        hiapi.distribute.Strategy(compression="qsgd", sparse_exchange="sparse_allreduce")
    with pytest.raises(ValueError, match="sparse_exchange must be.*'ring'"):
        hiapi.distribute.Strategy(compression="topk", sparse_exchange="ring")


@pytest.mark.parametrize("ranks", [2, 3, 4])
def test_buckets_equal_the_per_tensor_path_and_the_sparse_allreduce_sums(ranks):
    """top-k and DGC, allgather and sparse-allreduce exchanges, weights as the per-tensor path
    to float tolerance and identical on every rank; sparse allreduce == MPI's dense sum."""
    methods = ["topk", "dgc"] if ranks != 3 else []
    result = run_mpi(ranks, "compressed_buckets.py", *methods, timeout=300)
    assert "OK" in result.stdout
