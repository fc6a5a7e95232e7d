"""Train a model with ``Strategy(pipeline_stages=<ranks>)`` or, with the schedule ``tensor``,
``Strategy(tensor_parallel=<ranks>)`` (float64) and write, per rank, the weights after fit, the
History and evaluate's logs; one process writes the same without either when run without
mpiexec and with ``reference`` as the schedule.

usage: pipeline.py OUT_DIR SCHEDULE(gpipe|1f1b|tensor|reference) MODEL(mlp|functional|cnn|embedding) MICRO_BATCHES
                   [STAGES_OR_TENSOR_PARTS] [BATCH_SIZE] [TENSOR_PARTS_PER_STAGE]
"""
import json
import sys

import numpy as np

import hiapi
from hiapi import layers


def make_model(kind):
    hiapi.utils.set_random_seed(11)
    if kind == "mlp":
        return hiapi.Sequential([hiapi.Input(shape=(12,)), layers.Dense(16, activation="tanh", kernel_regularizer=hiapi.regularizers.L2(1e-3)),
                                 layers.Dense(16, activation="relu"),
                                 layers.Dense(16, activation="tanh",
                                              kernel_regularizer=hiapi.regularizers.L2(1e-3)),
                                 layers.Dense(8, activation="relu"),
                                 layers.Dense(3, activation="softmax")])
    if kind == "functional":             # the MLP's chain built with hiapi.Model
        x = inputs = hiapi.Input(shape=(12,))
        for units, activation in ((16, "tanh"), (16, "relu"), (8, "relu")):
            x = layers.Dense(units, activation=activation)(x)
        return hiapi.Model(inputs, layers.Dense(3, activation="softmax")(x))
    if kind == "embedding":              # a vocabulary of 30 over 4 ranks: uneven blocks
        return hiapi.Sequential([hiapi.Input(shape=(5,), dtype="int64"),
                                 layers.Embedding(30, 6), layers.Flatten(),
                                 layers.Dense(8, activation="tanh"),
                                 layers.Dense(3, activation="softmax")])
    return hiapi.Sequential([hiapi.Input(shape=(8, 8, 1)),
                             layers.Conv2D(4, 3, padding="same", activation="relu"),
                             layers.MaxPooling2D(2), layers.Conv2D(6, 3, activation="relu"),
                             layers.Flatten(), layers.Dense(10, activation="tanh"),
                             layers.Dense(3, activation="softmax")])


def data(kind):
    rng = np.random.default_rng(4)
    if kind == "embedding":
        x = rng.integers(0, 30, size=(96, 5))
        return x, (x[:, 0] % 3).astype("int64")
    x = rng.normal(size=(96, 12) if kind in ("mlp", "functional") else (96, 8, 8, 1))
    y = (x.reshape(96, -1)[:, :3].argmax(axis=1)).astype("int64")
    return x, y


def train(out, schedule, kind, micro_batches):
    hiapi.config.set_floatx("float64")
    ranks = int(sys.argv[5]) if len(sys.argv) > 5 else 2
    parts = int(sys.argv[7]) if len(sys.argv) > 7 else 1       # tensor parts per stage
    strategy = None if schedule == "reference" else \
        hiapi.distribute.Strategy(tensor_parallel=ranks) if schedule == "tensor" else \
        hiapi.distribute.Strategy(pipeline_stages=ranks, micro_batches=micro_batches,
                                  schedule=schedule, tensor_parallel=parts)
    scope = strategy.scope() if strategy else _nothing()
    with scope:
        model = make_model(kind)
        model.compile(optimizer=hiapi.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy",
                      metrics=["accuracy"])
    x, y = data(kind)
    batch_size = int(sys.argv[6]) if len(sys.argv) > 6 else 24     # per pipeline replica
    history = model.fit(x, y, batch_size=batch_size, epochs=2, verbose=0, validation_split=0.25)
    logs = model.evaluate(x, y, verbose=0, return_dict=True)
    rank = strategy.rank if strategy else 0
    report = []
    model.memory_report(print_fn=report.append)      # this rank's stage (or the whole step)
    arena_mib = float(next(line for line in report[0].splitlines()
                           if "planned (arena)" in line).split()[-2])
    np.savez(f"{out}/{schedule}_{rank}.npz", *model.get_weights())
    if rank == 0:                       # rank 0 alone, after fit: gathers nothing itself
        model.save(f"{out}/{schedule}.hiapi")
    with open(f"{out}/{schedule}_{rank}.json", "w") as handle:
        json.dump({"history": history.history, "evaluate": logs, "arena_mib": arena_mib,
                   "explain": None if strategy is None else {"pairs": strategy.pairs}
                   if schedule == "tensor" else strategy.explain(print_fn=lambda text: None)},
                  handle, default=float)


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


if __name__ == "__main__":
    train(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
