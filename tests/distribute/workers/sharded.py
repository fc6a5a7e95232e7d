"""Train an MLP of four equal hidden layers under a Strategy, with or without sharded
optimizer state, with a backup each epoch; rank 0 saves the model after ``fit``; then a new
run resumes from the backup for one more epoch. Each rank writes its weights (after 2 epochs
and resumed after 3), its optimizer slot bytes and how often it started each collective.

usage: sharded.py OUT_DIR OPTIMIZER SHARD(0|1) [BUCKET_CAP_MB]

Small buckets (the default, one per hidden layer) are what catch ranks starting their
allreduces in different orders.
"""
import json
import sys

import numpy as np

import hiapi
from hiapi import layers

def make_optimizer(name):
    return {"sgd": lambda: hiapi.optimizers.SGD(0.05, momentum=0.9),
            "adam": lambda: hiapi.optimizers.Adam(0.003),
            "lars": lambda: hiapi.optimizers.LARS(0.5, momentum=0.9, weight_decay=1e-4,
                                                  trust_coefficient=0.02)}[name]()


def data():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(400, 48)).astype("float32")
    y = (x[:, :10] @ rng.normal(size=(10, 1)) > 0).astype("int64")[:, 0] + \
        2 * (x[:, 10:20].sum(axis=1) > 0)
    return x, y


def make_model():
    hiapi.utils.set_random_seed(3)
    return hiapi.Sequential([hiapi.Input(shape=(48,))] +
                            [layers.Dense(48, activation="tanh") for _ in range(4)] +
                            [layers.Dense(4, activation="softmax")])


def count_calls(communicator, names):
    """How often the train step used each collective (instrumentation only: the real ones
    run)."""
    counts = dict.fromkeys(names, 0)
    for name in names:
        def counted(*args, _name=name, _real=getattr(communicator, name), **kwargs):
            counts[_name] += 1
            return _real(*args, **kwargs)
        setattr(communicator, name, counted)
    return counts


def make_strategy(shard, bucket_cap_mb):
    return hiapi.distribute.Strategy(shard_optimizer_state=shard, bucket_cap_mb=bucket_cap_mb)


if __name__ == "__main__":
    out, name, shard = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
    bucket_cap_mb = float(sys.argv[4]) if len(sys.argv) > 4 else 0.01
    strategy = make_strategy(shard, bucket_cap_mb)
    calls = count_calls(strategy.communicator, ["iallreduce", "ireduce"])
    with strategy.scope():
        model = make_model()
        model.compile(optimizer=make_optimizer(name), loss="sparse_categorical_crossentropy")
    x, y = data()
    backup = hiapi.callbacks.BackupAndRestore(f"{out}/backup", delete_checkpoint=False)
    model.fit(x, y, batch_size=20, epochs=2, verbose=0, callbacks=[backup])
    optimizer = model.optimizer
    slot_bytes = sum(v.numpy().nbytes for v in optimizer.variables
                     if v is not optimizer.iterations)
    lines = []                           # what memory_report() says this rank holds
    model.memory_report(print_fn=lines.append)
    report_line = next(line for line in lines[0].splitlines() if "optimizer state" in line)
    if strategy.is_chief:               # rank 0 alone, after fit: the usual script
        model.save(f"{out}/model.hiapi")
    np.savez(f"{out}/weights_{strategy.rank}.npz", *model.get_weights())
    # a new run resumes from the backup of epoch 2 (each rank takes its own shard) for epoch 3
    resumed_strategy = make_strategy(shard, bucket_cap_mb)
    with resumed_strategy.scope():
        resumed = make_model()
        resumed.compile(optimizer=make_optimizer(name), loss="sparse_categorical_crossentropy")
    resumed.fit(x, y, batch_size=20, epochs=3, verbose=0,
                callbacks=[hiapi.callbacks.BackupAndRestore(f"{out}/backup")])
    np.savez(f"{out}/resumed_{strategy.rank}.npz", *resumed.get_weights())
    with open(f"{out}/slots_{strategy.rank}.json", "w") as handle:
        json.dump({"slot_bytes": slot_bytes, "calls": calls,
                   "report_optimizer_mib": float(report_line.split()[-2])}, handle)
