"""Dropout under a Strategy: each rank writes its counter and an eager mask after fit, and the
weights and counters of an uninterrupted 2-epoch run and of a run resumed from a backup.

usage: random_streams.py OUT_DIR
"""
import json
import sys

import numpy as np

import hiapi
from hiapi import layers


def train(out, epochs, backup=None):
    strategy = hiapi.distribute.Strategy()
    with strategy.scope():
        hiapi.utils.set_random_seed(7)
        model = hiapi.Sequential([hiapi.Input(shape=(16,)), layers.Dense(16),
                                  layers.Dropout(0.5, seed=3), layers.Dense(1)])
        model.compile(optimizer=hiapi.optimizers.SGD(0.05), loss="mse")
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 16)).astype("float32")
    y = x[:, :1] * 2.0
    callbacks = [hiapi.callbacks.BackupAndRestore(f"{out}/backup", delete_checkpoint=False)] \
        if backup else []
    model.fit(x, y, batch_size=8, epochs=epochs, verbose=0, callbacks=callbacks)
    return strategy, model


if __name__ == "__main__":
    out = sys.argv[1]
    strategy, straight = train(out, 2)
    dropout = straight.layers[1]
    counter = int(dropout.counter.numpy())            # (the eager call below moves it on)
    mask = dropout(np.ones((1, 64), "float32"), training=True)
    train(out, 1, backup=True)                        # stops after epoch 1, backup kept
    _, resumed = train(out, 2, backup=True)           # resumes for epoch 2
    with open(f"{out}/rank_{strategy.rank}.json", "w") as handle:
        json.dump({"counter": counter,
                   "resumed_counter": int(resumed.layers[1].counter.numpy()),
                   "mask": np.asarray(mask).ravel().tolist(),
                   "weights": [w.ravel().tolist() for w in straight.get_weights()],
                   "resumed_weights": [w.ravel().tolist() for w in resumed.get_weights()]},
                  handle)
