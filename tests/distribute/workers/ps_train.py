"""Train a small MLP under a ParameterServerStrategy; each rank saves its weights, logs and
stats as JSON. With --reference, rank 0 also trains the same model in one process on the
workers' global batch (what synchronous data-parallel training equals).

usage: ps_train.py OUT_DIR --servers S --staleness {0,N,none} [--backup B] [--slow R:SECONDS]
       [--compression NAME] [--optimizer sgd|adam] [--hang R:STEP:SECONDS] [--timeout T]
       [--fits N] [--checkpoint N] [--backup-every N]
"""
import argparse
import json
import time

import numpy as np

import hiapi
from hiapi import layers

parser = argparse.ArgumentParser()
parser.add_argument("out")
parser.add_argument("--servers", type=int, default=1)
parser.add_argument("--staleness", default="0")
parser.add_argument("--backup", type=int, default=0)
parser.add_argument("--slow", default=None)
parser.add_argument("--hang", default=None)
parser.add_argument("--timeout", type=float, default=60.0)
parser.add_argument("--compression", default="none")
parser.add_argument("--optimizer", default="sgd")
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--samples", type=int, default=480)
parser.add_argument("--fits", type=int, default=1)
parser.add_argument("--reference", action="store_true")
parser.add_argument("--checkpoint", type=int, default=0,
                    help="ModelCheckpoint every N batches to OUT_DIR/ckpt.hiapi")
parser.add_argument("--backup-every", type=int, default=0,
                    help="BackupAndRestore every N batches in OUT_DIR/backup")
args = parser.parse_args()

staleness = None if args.staleness == "none" else int(args.staleness)
options = {"ratio": 0.1} if args.compression == "topk" else {}
strategy = hiapi.distribute.ParameterServerStrategy(
    servers=args.servers, staleness=staleness, backup_workers=args.backup,
    compression=args.compression, worker_timeout=args.timeout, **options)
(x, y), _ = hiapi.datasets.mnist.load_data()
x, y = x[:args.samples] / 255.0, y[:args.samples]


def make_model():
    hiapi.utils.set_random_seed(5)
    model = hiapi.Sequential([hiapi.Input(shape=(28, 28)), layers.Flatten(),
                              layers.Dense(16, activation="relu"),
                              layers.Dense(10, activation="softmax")])
    optimizer = hiapi.optimizers.Adam(0.003) if args.optimizer == "adam" else \
        hiapi.optimizers.SGD(0.1, momentum=0.9)
    model.compile(optimizer=optimizer, loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    return model


class Delay(hiapi.callbacks.Callback):
    """--slow R:S sleeps S seconds every step on rank R; --hang R:K:S once, at step K."""

    def on_train_batch_end(self, batch, logs=None):
        if args.slow and strategy.rank == int(args.slow.split(":")[0]):
            time.sleep(float(args.slow.split(":")[1]))
        if args.hang:
            rank, step, seconds = args.hang.split(":")
            if strategy.rank == int(rank) and batch == int(step):
                time.sleep(float(seconds))


with strategy.scope():
    model = make_model()
callbacks = [Delay()] + ([hiapi.callbacks.ModelCheckpoint(
    f"{args.out}/ckpt.hiapi", save_freq=args.checkpoint)] if args.checkpoint else [])
callbacks += [hiapi.callbacks.BackupAndRestore(f"{args.out}/backup", save_freq=args.backup_every,
                                               delete_checkpoint=False)] \
    if args.backup_every else []
for _ in range(args.fits):           # a second fit continues from where the first ended
    history = model.fit(x, y, batch_size=8, epochs=args.epochs, validation_split=0.25,
                        verbose=0, callbacks=callbacks)
evaluated = model.evaluate(x, y, verbose=0, return_dict=True)
stats = strategy.stats
record = {"history": history.history, "evaluate": evaluated, "serves": strategy.serves,
          "stopped": bool(strategy.client and strategy.client.stopped),
          "stats": {"steps": stats.steps, "applied": stats.applied, "dropped": stats.dropped,
                    "mean_staleness": stats.mean_staleness,
                    "max_staleness": stats.max_staleness, "max_clock_gap": stats.max_clock_gap,
                    "bytes_sent": stats.bytes_sent, "bytes_received": stats.bytes_received,
                    "dead": stats.dead}}
np.savez(f"{args.out}/weights_{strategy.world_rank}.npz", *model.get_weights())
if args.reference and strategy.world_rank == 0:
    reference = make_model()
    for _ in range(args.fits):
        reference.fit(x, y, batch_size=8 * strategy.workers, epochs=args.epochs,
                      validation_split=0.25, verbose=0)
    np.savez(f"{args.out}/reference.npz", *reference.get_weights())
with open(f"{args.out}/record_{strategy.world_rank}.json", "w") as handle:
    json.dump(record, handle, default=str)
