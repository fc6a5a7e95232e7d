"""Train on a PyDataset, a generator or arrays under a Strategy; each rank saves its weights,
history and evaluation.

usage: data_sources.py OUT_DIR MODE
  pydataset   rank r takes batches r, r+N, ... of one PyDataset of 25-sample batches
  generator   each rank's generator yields batches r, r+N, ... (steps_per_epoch given)
  counts      rank r holds 400 - 7r samples: every rank must raise, naming each count
  same-steps  rank r holds 400 - r samples (same number of steps): must raise as well
  short-generator  rank 1's generator has one batch fewer (no steps_per_epoch)
  batch-shuffle  arrays with fit(shuffle="batch"): each rank its part of every chunk
"""
import itertools
import json
import sys

import numpy as np

import hiapi
from hiapi import layers

out, mode = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(7)
y = rng.integers(0, 4, 400)
x = (rng.normal(size=(400, 10)) + y[:, None] * 0.5).astype(np.float32)
BATCH = 25

strategy = hiapi.distribute.Strategy()
rank, size = strategy.rank, strategy.size
hiapi.utils.set_random_seed(3)
with strategy.scope():
    model = hiapi.Sequential([hiapi.Input(shape=(10,)), layers.Dense(16, activation="relu"),
                              layers.Dense(4, activation="softmax")])
    model.compile(optimizer=hiapi.optimizers.SGD(0.1, momentum=0.9),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])


class Batches(hiapi.utils.PyDataset):
    def __len__(self):
        return len(x) // BATCH

    def __getitem__(self, index):
        part = slice(index * BATCH, (index + 1) * BATCH)
        return x[part], y[part]


def my_batches(drop_last=False):
    """This rank's share of the batches: r, r+N, ..."""
    indices = list(range(rank, len(x) // BATCH, size))
    if drop_last:
        indices = indices[:-1]
    return [(x[i * BATCH:(i + 1) * BATCH], y[i * BATCH:(i + 1) * BATCH]) for i in indices]


if mode == "pydataset":
    history = model.fit(Batches(), epochs=2, shuffle=False, verbose=0)
    evaluation = model.evaluate(Batches(), verbose=0)
elif mode == "generator":
    steps = len(x) // BATCH // size
    history = model.fit(itertools.cycle(my_batches()), steps_per_epoch=steps, epochs=2,
                        verbose=0)
    evaluation = model.evaluate(iter(my_batches()), verbose=0)
elif mode == "batch-shuffle":
    history = model.fit(x, y, batch_size=BATCH, epochs=2, shuffle="batch", verbose=0)
    evaluation = model.evaluate(x, y, verbose=0)
elif mode == "short-generator":
    history = model.fit(iter(my_batches(drop_last=rank == 1)), epochs=1, verbose=0)
else:
    n = 400 - (7 if mode == "counts" else 1) * rank
    history = model.fit(x[:n], y[:n], batch_size=BATCH, epochs=2, verbose=0)
np.savez(f"{out}/weights_{rank}.npz", *model.get_weights())
with open(f"{out}/history_{rank}.json", "w") as handle:
    json.dump({"history": history.history, "evaluate": evaluation}, handle)
