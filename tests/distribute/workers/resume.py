"""Mid-epoch BackupAndRestore under a Strategy: an uninterrupted run, a run whose job is
aborted mid-epoch, and the rerun that resumes it. Rank 0 writes the history and weights.

usage: resume.py MODE OUT_DIR     MODE: straight | interrupt | resume
"""
import json
import sys

import numpy as np

import hiapi
import toy_classifier    # beside this script (its folder is on sys.path)

mode, out = sys.argv[1], sys.argv[2]
strategy, model, x, y = toy_classifier.build(240)


class Crash(hiapi.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        if int(self.model.optimizer.iterations.numpy()) == 25:      # epoch 1, batch 10
            raise RuntimeError("simulated crash")


callbacks = [] if mode == "straight" else \
    [hiapi.callbacks.BackupAndRestore(f"{out}/backup", save_freq=4)]
callbacks += [Crash()] if mode == "interrupt" else []
history = model.fit(x, y, batch_size=8, epochs=3, verbose=0, callbacks=callbacks)
if strategy.rank == 0:
    np.savez(f"{out}/{mode}_weights.npz", *model.get_weights())
    with open(f"{out}/{mode}_history.json", "w") as handle:
        json.dump({"epoch": history.epoch, **history.history}, handle)
