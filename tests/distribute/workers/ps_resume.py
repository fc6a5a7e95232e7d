"""BackupAndRestore under ParameterServerStrategy(staleness=0): an uninterrupted run, a run
whose job is aborted at the start of epoch 2, and the rerun that resumes it. With SGD-momentum
or Adam the servers' slots and update count must come back too, or the resumed run differs.

The straight run also writes what a user would keep: ``ModelCheckpoint`` files during fit
(``ckpt-{epoch}.keras`` and ``.hiapi``) and ``model.save`` after it; rank 0 then trains the
same model in one process on the workers' global batch and saves that too, so the test can
check the parameter-server files hold the one-process optimizer state.

usage: ps_resume.py MODE OUT_DIR [--servers S] [--optimizer sgd|momentum|adam]
       [--save-freq N --crash-batch K]
       MODE: straight | interrupt | resume; with --crash-batch the job dies at batch K of
       epoch 2 and BackupAndRestore backs up every N batches (a mid-epoch resume)
"""
import argparse
import json

import numpy as np

import hiapi
from hiapi import layers

parser = argparse.ArgumentParser()
parser.add_argument("mode", choices=["straight", "interrupt", "resume"])
parser.add_argument("out")
parser.add_argument("--servers", type=int, default=1)
parser.add_argument("--optimizer", default="sgd")
parser.add_argument("--save-freq", type=int, default=None)
parser.add_argument("--crash-batch", type=int, default=None)
args = parser.parse_args()
mode, out = args.mode, args.out

strategy = hiapi.distribute.ParameterServerStrategy(servers=args.servers, staleness=0)
rng = np.random.default_rng(0)
x = rng.normal(size=(240, 6)).astype(np.float32)
y = (x[:, 0] - x[:, 2] > 0).astype(int)


def make_model():
    hiapi.utils.set_random_seed(4)
    optimizer = {"sgd": lambda: hiapi.optimizers.SGD(0.1),
                 "momentum": lambda: hiapi.optimizers.SGD(
                     hiapi.optimizers.schedules.ExponentialDecay(0.05, 10, 0.8), momentum=0.9),
                 "adam": lambda: hiapi.optimizers.Adam(0.01)}[args.optimizer]()
    model = hiapi.Sequential([hiapi.Input(shape=(6,)), layers.Dense(8, activation="tanh"),
                              layers.Dense(2, activation="softmax")])
    model.compile(optimizer=optimizer, metrics=["accuracy"],
                  loss="sparse_categorical_crossentropy")
    return model


with strategy.scope():
    model = make_model()


class Crash(hiapi.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch
        if epoch == 1 and strategy.rank == 0 and args.crash_batch is None:
            raise RuntimeError("simulated crash")

    def on_train_batch_begin(self, batch, logs=None):
        if self.epoch == 1 and strategy.rank == 0 and batch == args.crash_batch:
            raise RuntimeError("simulated crash")


backup = hiapi.callbacks.BackupAndRestore(f"{out}/backup", save_freq=args.save_freq or "epoch")


class LogRate(hiapi.callbacks.Callback):
    """The rate at each epoch's end (fit logs none, as Keras's): under a parameter server it
    follows the servers' update count, restored on resume."""

    def on_epoch_end(self, epoch, logs=None):
        logs["learning_rate"] = self.model.optimizer.current_learning_rate()


callbacks = [LogRate()] + ([] if mode == "straight" else [backup])
callbacks += [Crash()] if mode == "interrupt" else []
if mode == "straight":
    callbacks += [hiapi.callbacks.ModelCheckpoint(f"{out}/ckpt-{{epoch}}.keras"),
                  hiapi.callbacks.ModelCheckpoint(f"{out}/ckpt-{{epoch}}.hiapi")]
history = model.fit(x, y, batch_size=8, epochs=3, verbose=0, callbacks=callbacks)
np.savez(f"{out}/{mode}_weights_{strategy.world_rank}.npz", *model.get_weights())
if strategy.rank == 0:
    with open(f"{out}/{mode}_history.json", "w") as handle:
        json.dump({"epoch": history.epoch, **history.history}, handle)
if mode == "straight" and strategy.world_rank == 0:
    model.save(f"{out}/final.keras")
    model.save(f"{out}/final.hiapi")
    reference = make_model()                  # one process, the workers' global batch
    checkpoints = [hiapi.callbacks.ModelCheckpoint(f"{out}/reference-{{epoch}}.hiapi")]
    reference.fit(x, y, batch_size=8 * strategy.workers, epochs=3, verbose=0,
                  callbacks=checkpoints)
    reference.save(f"{out}/reference-final.hiapi")
