"""BackupAndRestore under ParameterServerStrategy(staleness=0): an uninterrupted run, a run
whose job is aborted at the start of epoch 2, and the rerun that resumes it. Plain SGD, so the
servers' (unsaved) slots play no part and the resumed run must end with the same weights.

usage: ps_resume.py MODE OUT_DIR     MODE: straight | interrupt | resume
"""
import json
import sys

import numpy as np

import hiapi
from hiapi import layers

mode, out = sys.argv[1], sys.argv[2]
hiapi.utils.set_random_seed(4)
strategy = hiapi.distribute.ParameterServerStrategy(staleness=0)
rng = np.random.default_rng(0)
x = rng.normal(size=(240, 6)).astype(np.float32)
y = (x[:, 0] - x[:, 2] > 0).astype(int)
with strategy.scope():
    model = hiapi.Sequential([hiapi.Input(shape=(6,)), layers.Dense(8, activation="tanh"),
                              layers.Dense(2, activation="softmax")])
    model.compile(optimizer=hiapi.optimizers.SGD(0.1), metrics=["accuracy"],
                  loss="sparse_categorical_crossentropy")


class Crash(hiapi.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        if epoch == 1 and strategy.rank == 0:
            raise RuntimeError("simulated crash")


callbacks = [] if mode == "straight" else [hiapi.callbacks.BackupAndRestore(f"{out}/backup")]
callbacks += [Crash()] if mode == "interrupt" else []
history = model.fit(x, y, batch_size=8, epochs=3, verbose=0, callbacks=callbacks)
np.savez(f"{out}/{mode}_weights_{strategy.world_rank}.npz", *model.get_weights())
if strategy.rank == 0:
    with open(f"{out}/{mode}_history.json", "w") as handle:
        json.dump({"epoch": history.epoch, **history.history}, handle)
