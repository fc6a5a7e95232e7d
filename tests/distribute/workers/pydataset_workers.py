"""data_sources.py's "pydataset" run with the PyDataset read by parallel workers: each rank
its own threads or spawned processes on its own batches r, r+N, ...

usage: pydataset_workers.py OUT_DIR threads|processes

Guarded by ``__main__``: spawned workers import this script again, and must not join the job.
"""
import json
import sys

import numpy as np

import hiapi
from hiapi import layers

BATCH = 25


class Batches(hiapi.utils.PyDataset):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        rng = np.random.default_rng(7)
        self.y = rng.integers(0, 4, 400)
        self.x = (rng.normal(size=(400, 10)) + self.y[:, None] * 0.5).astype(np.float32)

    def __len__(self):
        return len(self.x) // BATCH

    def __getitem__(self, index):
        part = slice(index * BATCH, (index + 1) * BATCH)
        return self.x[part], self.y[part]


def main(out, kind):
    options = dict(workers=2, use_multiprocessing=kind == "processes", max_queue_size=3)
    strategy = hiapi.distribute.Strategy()
    hiapi.utils.set_random_seed(3)
    with strategy.scope():
        model = hiapi.Sequential([hiapi.Input(shape=(10,)), layers.Dense(16, activation="relu"),
                                  layers.Dense(4, activation="softmax")])
        model.compile(optimizer=hiapi.optimizers.SGD(0.1, momentum=0.9),
                      loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    history = model.fit(Batches(**options), epochs=2, shuffle=False, verbose=0)
    evaluation = model.evaluate(Batches(**options), verbose=0)
    np.savez(f"{out}/weights_{strategy.rank}.npz", *model.get_weights())
    with open(f"{out}/history_{strategy.rank}.json", "w") as handle:
        json.dump({"history": history.history, "evaluate": evaluation}, handle)


if __name__ == "__main__":
    main(*sys.argv[1:3])
