"""Ways for one rank to go wrong; the job must end with a message instead of hanging.

usage: failures.py MODE
  raise-between-fits  rank 1 raises between two fit calls (outside the fit guard)
  exit-between-fits   rank 1 calls sys.exit(3) between two fit calls (no exception hook runs)
  sleep-in-fit        rank 2 sleeps 60 s before its 3rd train step of epoch 2
  sleep-outside-fit   rank 1 sleeps 60 s before a plain allreduce
  sleep-before-ring   rank 1 sleeps 60 s before hiapi's ring allreduce
  skip-allreduce      rank 3 skips an allreduce and goes on to a barrier
"""
import sys
import time

import numpy as np

import hiapi
from hiapi import layers

mode = sys.argv[1]
hiapi.utils.set_random_seed(1)
strategy = hiapi.distribute.Strategy()
rank = strategy.rank
x = np.random.default_rng(0).normal(size=(256, 8)).astype(np.float32)
y = (x[:, 0] > 0).astype(int)
with strategy.scope():
    model = hiapi.Sequential([hiapi.Input(shape=(8,)), layers.Dense(4, activation="relu"),
                              layers.Dense(2, activation="softmax")])
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")


class SleepBeforeStep(hiapi.callbacks.Callback):
    def on_train_batch_begin(self, batch, logs=None):
        if rank == 2 and self.epoch == 1 and batch == 2:
            print(f"rank {rank} sleeping", flush=True)
            time.sleep(60)

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch


if mode in ("raise-between-fits", "exit-between-fits"):
    model.fit(x, y, batch_size=16, epochs=1, verbose=0)
    if rank == 1 and mode == "exit-between-fits":
        sys.exit(3)
    if rank == 1:
        raise RuntimeError("deliberate failure between fits on rank 1")
    model.fit(x, y, batch_size=16, epochs=1, verbose=0)
elif mode == "sleep-in-fit":
    model.fit(x, y, batch_size=16, epochs=2, verbose=0, callbacks=[SleepBeforeStep()])
elif mode == "sleep-outside-fit":
    if rank == 1:
        time.sleep(60)
    strategy.communicator.allreduce(np.ones(1024, np.float32))
elif mode == "sleep-before-ring":
    ring = hiapi.distribute.MPICommunicator(algorithm="ring")
    if rank == 1:
        time.sleep(60)
    ring.allreduce(np.ones(1024, np.float32))
elif mode == "skip-allreduce":
    if rank != 3:
        strategy.communicator.allreduce(np.ones(1024, np.float32))
    strategy.communicator.barrier()
else:
    raise SystemExit(f"unknown mode {mode!r}")
print(f"rank {rank} finished", flush=True)
