"""Fit under a Strategy with a TensorBoard callback whose log_dir names the rank: only rank 0's
directory may get files. Each rank saves its History.

usage: tensorboard_logs.py OUT_DIR
"""
import json
import sys

import numpy as np

import hiapi
from hiapi import layers

out = sys.argv[1]
hiapi.utils.set_random_seed(3)
rng = np.random.default_rng(0)
x = rng.normal(size=(200, 4)).astype(np.float32)
y = (x.sum(axis=1) > 0).astype(np.int64)
strategy = hiapi.distribute.Strategy()
with strategy.scope():
    model = hiapi.Sequential([hiapi.Input(shape=(4,)), layers.Dense(8, activation="relu"),
                              layers.Dense(2, activation="softmax")])
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
board = hiapi.callbacks.TensorBoard(f"{out}/rank_{strategy.rank}", histogram_freq=1,
                                    update_freq="batch")
history = model.fit(x, y, batch_size=20, epochs=2, validation_split=0.2, verbose=0,
                    callbacks=[board])
with open(f"{out}/history_{strategy.rank}.json", "w") as handle:
    json.dump(history.history, handle)
