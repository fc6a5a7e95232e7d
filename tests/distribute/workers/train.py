"""Train a small MLP on real MNIST under a Strategy; each rank saves its weights and logs.

usage: train.py OUT_DIR COMPRESSION [--fail-rank R] [--mismatch] [--optimizer O] [--algorithm A]
"""
import argparse
import json

import numpy as np

import hiapi
from hiapi import layers

parser = argparse.ArgumentParser()
parser.add_argument("out")
parser.add_argument("compression")
parser.add_argument("--fail-rank", type=int, default=None)
parser.add_argument("--mismatch", action="store_true")
parser.add_argument("--optimizer", default="sgd")
parser.add_argument("--algorithm", default="native")
args = parser.parse_args()

hiapi.utils.set_random_seed(11)
(x, y), _ = hiapi.datasets.mnist.load_data()
x, y = x[:1000] / 255.0, y[:1000]
options = {"ratio": 0.05} if args.compression == "topk" else \
    {"sparsity": 0.99, "warmup_epochs": 0} if args.compression == "dgc" else {}
strategy = hiapi.distribute.Strategy(compression=args.compression, bucket_cap_mb=0.05,
                                     algorithm=args.algorithm, **options)
hidden = 32 + (strategy.rank if args.mismatch else 0)
with strategy.scope():
    model = hiapi.Sequential([hiapi.Input(shape=(28, 28)), layers.Flatten(),
                              layers.Dense(hidden, activation="relu"),
                              layers.Dense(10, activation="softmax")])
    optimizer = hiapi.optimizers.Adam(0.003) if args.optimizer == "adam" else \
        hiapi.optimizers.SGD(0.1, momentum=0.9)
    model.compile(optimizer=optimizer, loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])


class FailOnRank(hiapi.callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
        if strategy.rank == args.fail_rank:
            raise RuntimeError(f"deliberate failure on rank {strategy.rank}")


history = model.fit(x, y, batch_size=25, epochs=2, validation_split=0.2, verbose=0,
                    callbacks=[FailOnRank()])
np.savez(f"{args.out}/weights_{strategy.rank}.npz", *model.get_weights())
with open(f"{args.out}/history_{strategy.rank}.json", "w") as handle:
    json.dump({"history": history.history, "bytes_per_step": strategy.stats.bytes_per_step,
               "ratio": strategy.stats.compression_ratio, "size": strategy.size,
               "shared_buckets": strategy.stats.shared_buckets,
               "communicator": type(strategy.communicator).__name__}, handle)
