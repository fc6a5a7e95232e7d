"""BatchSizeScheduler under a Strategy: the per-worker batch grows 10 -> 20 at epoch 2, so
the global batch grows 10N -> 20N. Rank 0 saves its weights.

usage: batch_growth.py OUT_DIR
"""
import sys

import numpy as np

import hiapi
from hiapi import layers

out = sys.argv[1]
rng = np.random.default_rng(7)
y = rng.integers(0, 3, 240)
x = (rng.normal(size=(240, 6)) + y[:, None]).astype(np.float32)
strategy = hiapi.distribute.Strategy()
hiapi.utils.set_random_seed(3)
with strategy.scope():
    model = hiapi.Sequential([hiapi.Input(shape=(6,)), layers.Dense(8, activation="relu"),
                              layers.Dense(3, activation="softmax")])
    model.compile(optimizer=hiapi.optimizers.SGD(0.1, momentum=0.9),
                  loss="sparse_categorical_crossentropy")
schedule = hiapi.callbacks.BatchSizeScheduler.instead_of_decay(10, boundaries=[1], factor=2)
model.fit(x, y, batch_size=10, epochs=2, shuffle=False, verbose=0, callbacks=[schedule])
if strategy.rank == 0:
    np.savez(f"{out}/weights.npz", *model.get_weights())
