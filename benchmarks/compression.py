"""Gradient compression: bytes, accuracy, overlap and the sparse exchange, per method.

    mpiexec -n 2 python benchmarks/compression.py --model cnn --steps 30       # bytes/ratio
    mpiexec -n 2 python benchmarks/compression.py --model mlp --epochs 5 --methods none dgc
    mpiexec -n 4 python benchmarks/compression.py --mode overlap --steps 20    # step times
    mpiexec -n 8 python benchmarks/compression.py --mode exchange              # bytes, time

``--mode methods`` (default): each method trains the same model from the same seed on real
MNIST under a ``hiapi.distribute.Strategy``; rank 0 prints one JSON line per method with the
bytes this worker sent per step, the ratio dense / sent, the test accuracy and the seconds.

``--mode overlap``: per-step time of top-k and DGC three ways, in interleaved rounds so the
machine's load falls on all alike: per tensor and blocking after the backward pass
(``overlap=False``), in buckets overlapping the backward pass with the allgather exchange, and
in buckets with the sparse allreduce; ratios against the blocking path.

``--mode exchange``: one bucket of ``--elements`` floats at top-k densities, summed over the
ranks by allgather (the per-tensor path: every rank receives every payload) and by the sparse
allreduce (recursive doubling, dense once the union fills up); the most bytes any rank sent or
received, median seconds, and the ratios sparse / allgather. With more ranks than cores
(8 on 2) the bytes are the meaningful figure.
"""
import argparse
import json
import statistics
import time

import numpy as np

import hiapi
from hiapi import layers

OPTIONS = {"topk": {"ratio": 0.01}, "threshold": {"threshold": 0.01},
           "dgc": {"sparsity": 0.999}, "qsgd": {"levels": 127}}


def build(kind):
    if kind == "cnn":           # the Keras MNIST convnet
        return hiapi.Sequential([
            hiapi.Input(shape=(28, 28, 1)), layers.Conv2D(32, 3, activation="relu"),
            layers.MaxPooling2D(), layers.Conv2D(64, 3, activation="relu"),
            layers.MaxPooling2D(), layers.Flatten(), layers.Dropout(0.5),
            layers.Dense(10, activation="softmax")])
    return hiapi.Sequential([hiapi.Input(shape=(28, 28, 1)), layers.Flatten(),
                             layers.Dense(512, activation="relu"),
                             layers.Dense(10, activation="softmax")])


class StepTimes(hiapi.callbacks.Callback):
    """Seconds of each train step (batch begin to batch end), nothing else of ``fit``."""

    def __init__(self):
        super().__init__()
        self.seconds = []

    def on_train_batch_begin(self, batch, logs=None):
        self._start = time.perf_counter()

    def on_train_batch_end(self, batch, logs=None):
        self.seconds.append(time.perf_counter() - self._start)


def overlap_mode(args, x, y):
    variants = [("blocking per tensor", dict(overlap=False)),
                ("buckets + allgather", dict(sparse_exchange="allgather")),
                ("buckets + sparse allreduce", dict(sparse_exchange="sparse_allreduce"))]
    for method in ("topk", "dgc"):
        runs = []
        for name, extra in variants:
            hiapi.utils.set_random_seed(0)
            options = dict(OPTIONS[method], **({"warmup_epochs": 0} if method == "dgc" else {}))
            strategy = hiapi.distribute.Strategy(compression=method,
                                                 bucket_cap_mb=args.bucket_cap_mb,
                                                 **options, **extra)
            with strategy.scope():
                model = build(args.model)
                model.compile(optimizer=hiapi.optimizers.SGD(0.05, momentum=0.9),
                              loss="sparse_categorical_crossentropy")
            runs.append((name, strategy, model, StepTimes()))
        steps = args.steps or 10
        for round_ in range(args.rounds + 1):          # round 0 compiles and warms up
            for name, strategy, model, times in runs:
                if round_ == 1:
                    times.seconds.clear()
                model.fit(x, y, batch_size=args.batch_size, epochs=1, steps_per_epoch=steps,
                          verbose=0, callbacks=[times])
        base = statistics.median(runs[0][3].seconds)
        for name, strategy, model, times in runs:
            step = statistics.median(times.seconds)
            if strategy.is_chief:
                print(json.dumps({"benchmark": "compression-overlap", "model": args.model,
                                  "method": method, "workers": strategy.size,
                                  "variant": name, "median_step_s": round(step, 5),
                                  "over_blocking": round(step / base, 3),
                                  "bytes_per_step": round(strategy.stats.bytes_per_step),
                                  "steps_timed": len(times.seconds)}), flush=True)


def exchange_mode(args):
    from mpi4py import MPI
    from hiapi.distribute.compression import _sparse_sum
    from hiapi.distribute.communicator import MPICommunicator
    from hiapi.distribute.sparse_allreduce import SparseVector, sparse_allreduce
    communicator = MPICommunicator(MPI.COMM_WORLD)
    comm, rank, size = communicator.comm, communicator.rank, communicator.size
    n = args.elements
    for density in args.densities:
        k = max(1, int(density * n))
        shared = np.random.default_rng(99).choice(n, k, replace=False)   # coordinates that
        own = np.random.default_rng(rank).choice(n, k, replace=False)    # every rank picks
        cut = int(args.shared_fraction * k)
        candidates = np.concatenate([shared[:cut], own])
        first = np.sort(np.unique(candidates, return_index=True)[1])    # shared ones first
        indices = candidates[first[:k]].astype(np.int32)
        values = np.random.default_rng(rank + 50).normal(size=indices.size).astype(np.float32)

        def by_allgather():
            gathered = [communicator.allgather(a) for a in (indices, values)]
            parts = [np.split(g, np.cumsum(sizes)[:-1]) for g, sizes in gathered]
            _sparse_sum(list(zip(*parts)), (n,), np.float32)
            return sum(gathered[0][1]) * 8 - indices.nbytes - values.nbytes   # received

        def by_sparse_allreduce():
            total, sent = sparse_allreduce(comm, SparseVector.from_pairs(n, indices, values))
            total.to_dense()
            return sent

        times = {"allgather": [], "sparse_allreduce": []}
        nbytes = {}
        for _ in range(args.rounds):
            for name, run in (("allgather", by_allgather),
                              ("sparse_allreduce", by_sparse_allreduce)):
                comm.Barrier()
                start = time.perf_counter()
                nbytes[name] = run()
                times[name].append(time.perf_counter() - start)
        most = {name: comm.allreduce(b, op=MPI.MAX) for name, b in nbytes.items()}
        seconds = {name: comm.allreduce(statistics.median(t), op=MPI.MAX)
                   for name, t in times.items()}
        if rank == 0:
            print(json.dumps({"benchmark": "sparse-exchange", "ranks": size, "elements": n,
                              "density": density, "shared_fraction": args.shared_fraction,
                              "allgather_bytes": most["allgather"],
                              "sparse_allreduce_bytes": most["sparse_allreduce"],
                              "bytes_ratio": round(most["sparse_allreduce"] /
                                                   most["allgather"], 3),
                              "allgather_s": round(seconds["allgather"], 5),
                              "sparse_allreduce_s": round(seconds["sparse_allreduce"], 5),
                              "time_ratio": round(seconds["sparse_allreduce"] /
                                                  seconds["allgather"], 3)}), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=["methods", "overlap", "exchange"], default="methods")
    parser.add_argument("--rounds", type=int, default=5,
                        help="interleaved rounds (overlap and exchange modes)")
    parser.add_argument("--bucket-cap-mb", type=float, default=0.05,
                        help="overlap mode: small buckets, so the first ones are compressed "
                             "and sent while the backward pass of the first layers runs")
    parser.add_argument("--elements", type=int, default=1_000_000, help="exchange mode")
    parser.add_argument("--densities", type=float, nargs="+", default=[0.001, 0.01, 0.1],
                        help="exchange mode: fraction of coordinates each rank sends")
    parser.add_argument("--shared-fraction", type=float, default=0.5,
                        help="exchange mode: fraction of a rank's coordinates that every "
                             "rank also sends (top-k of one model's gradients overlap)")
    parser.add_argument("--model", choices=["cnn", "mlp"], default="cnn")
    parser.add_argument("--methods", nargs="+",
                        default=["none", "fp16", "topk", "threshold", "qsgd", "onebit", "dgc"])
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--steps", type=int, default=None, help="steps per epoch (default all)")
    parser.add_argument("--batch-size", type=int, default=64, help="per worker")
    parser.add_argument("--dgc-warmup-epochs", type=int, default=4,
                        help="0 measures DGC's bytes at its final sparsity from the first step")
    args = parser.parse_args()
    if args.mode == "exchange":
        return exchange_mode(args)
    (x, y), (x_test, y_test) = hiapi.datasets.mnist.load_data()
    x, x_test = x[..., None] / 255.0, x_test[..., None] / 255.0
    if args.mode == "overlap":
        return overlap_mode(args, x, y)
    for method in args.methods:
        hiapi.utils.set_random_seed(0)
        options = dict(OPTIONS.get(method, {}))
        if method == "dgc":
            options["warmup_epochs"] = args.dgc_warmup_epochs
        strategy = hiapi.distribute.Strategy(compression=method, **options)
        with strategy.scope():
            model = build(args.model)
            model.compile(optimizer=hiapi.optimizers.SGD(
                strategy.scale_lr(0.05, base_batch=args.batch_size), momentum=0.9),
                loss="sparse_categorical_crossentropy", metrics=["accuracy"])
        start = time.perf_counter()
        model.fit(x, y, batch_size=args.batch_size, epochs=args.epochs,
                  steps_per_epoch=args.steps, verbose=0)
        seconds = time.perf_counter() - start
        _, accuracy = model.evaluate(x_test, y_test, batch_size=500, verbose=0)
        if strategy.is_chief:
            print(json.dumps({"benchmark": "compression", "model": args.model,
                              "method": method, "workers": strategy.size, "options": options,
                              "epochs": args.epochs,
                              "bytes_per_step": round(strategy.stats.bytes_per_step),
                              "compression_ratio": round(strategy.stats.compression_ratio, 2),
                              "test_accuracy": accuracy, "seconds": round(seconds, 1)}),
                  flush=True)


if __name__ == "__main__":
    main()
