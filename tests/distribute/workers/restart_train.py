"""A training job for ``python -m hiapi.run``: 4 epochs with BackupAndRestore(save_freq=3)
under a Strategy; rank 0 writes the final weights.

usage: restart_train.py OUT_DIR MODE
  straight   no failure
  killed     in the first attempt (HIAPI_RUN_ATTEMPT=0) the last rank SIGKILLs itself in the
             middle of epoch 2 (batch 5 of 10)
  repeating  rank 1 raises the same ValueError at epoch 2, batch 5 in every attempt
"""
import os
import signal
import sys

import numpy as np

import hiapi
import toy_classifier    # beside this script (its folder is on sys.path)

out, mode = sys.argv[1], sys.argv[2]
strategy, model, x, y = toy_classifier.build(80, per_worker=True)


class Fail(hiapi.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_begin(self, batch, logs=None):
        if self.epoch != 1 or batch != 4:
            return
        if mode == "killed" and os.environ.get("HIAPI_RUN_ATTEMPT") == "0" and \
                strategy.rank == strategy.size - 1:
            os.kill(os.getpid(), signal.SIGKILL)
        if mode == "repeating" and strategy.rank == 1:
            raise ValueError("the same bad batch every time")


model.fit(x, y, batch_size=8, epochs=4, verbose=0,
          callbacks=[hiapi.callbacks.BackupAndRestore(f"{out}/backup", save_freq=3), Fail()])
if strategy.rank == 0:
    np.savez(f"{out}/{mode}_weights.npz", *model.get_weights())
    print("finished", flush=True)
