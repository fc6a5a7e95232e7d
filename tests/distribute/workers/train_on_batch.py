"""``train_on_batch`` three times under a strategy (float64) and write, per rank, the returned
logs and the weights after ``strategy.consolidate``; with ``reference`` (no mpiexec) one
process does the same on the global batch.

usage: train_on_batch.py OUT_DIR MODE(pipeline|tensor|reference) KIND(mlp|cnn) PARTS [REPLICAS]

PARTS is the pipeline stages or tensor parts of a replica; each of the REPLICAS (default 1)
is handed its own 16 samples per step, so a step's global batch is 16 * REPLICAS.
"""
import json
import sys

import numpy as np

import hiapi
from pipeline import data, make_model

PER_REPLICA = 16


def main(out, mode, kind, parts, replicas):
    hiapi.config.set_floatx("float64")
    strategy = None if mode == "reference" else \
        hiapi.distribute.Strategy(pipeline_stages=parts, micro_batches=3) if mode == "pipeline" \
        else hiapi.distribute.Strategy(tensor_parallel=parts)
    replica = strategy.replica if strategy is not None else 0
    with (strategy.scope() if strategy else _nothing()):
        model = make_model(kind)
        model.compile(optimizer=hiapi.optimizers.Adam(0.01),
                      loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    x, y = data(kind)
    logs = []
    for step in range(3):
        batch = slice(step * PER_REPLICA * replicas, (step + 1) * PER_REPLICA * replicas)
        xb, yb = x[batch], y[batch]
        if strategy is not None:                   # this replica's part of the global batch
            xb, yb = xb[replica::replicas], yb[replica::replicas]
        logs.append(model.train_on_batch(xb, yb, return_dict=True))
    if strategy is not None:
        strategy.consolidate(model)                 # every stage's (part's) weights to all
    rank = strategy.rank if strategy else 0
    np.savez(f"{out}/{mode}_{rank}.npz", *model.get_weights())
    with open(f"{out}/{mode}_{rank}.json", "w") as handle:
        json.dump(logs, handle, default=float)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]),
         int(sys.argv[5]) if len(sys.argv) > 5 else 1)
