"""Compressed buckets against the per-tensor path, and the sparse allreduce against a dense sum.

usage: compressed_buckets.py METHOD [METHOD ...]

For each method (topk, dgc) trains the same small model from the same seed three ways: per
tensor (blocking), in buckets with the allgather exchange, in buckets with the sparse allreduce;
the weights must agree to float tolerance and be bit-identical across ranks. Then sums random
sparse vectors of several densities (sparse throughout, and dense after a round) with
``sparse_allreduce`` and checks them against MPI's dense allreduce. Prints OK on rank 0.
"""
import sys

import numpy as np
from mpi4py import MPI

import hiapi
from hiapi import layers
from hiapi.distribute.sparse_allreduce import SparseVector, sparse_allreduce

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
rng = np.random.default_rng(0)
x, y = rng.random((48 * size, 12)).astype("float32"), rng.integers(0, 3, 48 * size)
OPTIONS = {"topk": {"ratio": 0.1}, "dgc": {"sparsity": 0.9, "warmup_epochs": 0}}


def train(method, overlap, sparse_exchange):
    hiapi.utils.set_random_seed(1)
    strategy = hiapi.distribute.Strategy(compression=method, bucket_cap_mb=0.0005,
                                         overlap=overlap, sparse_exchange=sparse_exchange,
                                         **OPTIONS[method])
    with strategy.scope():
        model = hiapi.Sequential([hiapi.Input(shape=(12,)),
                                  layers.Dense(16, activation="relu"),
                                  layers.Dense(8, activation="relu"), layers.Dense(3)])
        model.compile(optimizer=hiapi.optimizers.SGD(0.1, momentum=0.9),
                      loss=hiapi.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(x, y, batch_size=8, epochs=1, verbose=0, shuffle=False)
    return model.get_weights()


for method in sys.argv[1:]:
    reference = train(method, False, "allgather")
    for sparse_exchange in ("allgather", "sparse_allreduce"):
        weights = train(method, True, sparse_exchange)
        for a, b in zip(weights, reference):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=f"{method} "
                                       f"{sparse_exchange} rank {rank}")
        everyone = comm.allgather(weights)
        for other in everyone:                       # replicas stay in lockstep
            for a, b in zip(other, weights):
                np.testing.assert_array_equal(a, b)

n = 1000
for density in (0.001, 0.01, 0.3):                   # 0.3: the union turns dense
    local = np.random.default_rng(rank + 10).random(n) < density
    local[rank] = True                               # never empty
    values = np.random.default_rng(rank + 20).normal(size=n).astype(np.float32) * local
    vector = SparseVector.from_pairs(n, np.flatnonzero(local), values[local])
    total, sent = sparse_allreduce(comm, vector)
    expected = values.copy()
    comm.Allreduce(MPI.IN_PLACE, expected, MPI.SUM)
    np.testing.assert_allclose(total.to_dense(), expected, rtol=1e-6, atol=1e-6)
    assert sent <= (size - 1).bit_length() * n * 4 + 8 * local.sum(), (density, sent)
    if density == 0.3 and size > 2:
        assert total.dense is not None               # switched to dense
    results = comm.allgather(total.to_dense())
    for other in results:
        np.testing.assert_array_equal(other, results[0])

if rank == 0:
    print("OK", flush=True)
