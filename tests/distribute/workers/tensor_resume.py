"""``Strategy(tensor_parallel=<ranks>)``: 2 epochs straight, and 1 epoch with a backup then a
new run resumed from it for epoch 2; each rank writes both runs' weights.

usage: tensor_resume.py OUT_DIR MODEL(mlp|cnn|embedding)
"""
import sys

import numpy as np

import hiapi
from pipeline import data, make_model


def train(out, kind, epochs, backup):
    strategy = hiapi.distribute.Strategy(tensor_parallel=hiapi.distribute.world().size)
    with strategy.scope():
        model = make_model(kind)
        model.compile(optimizer=hiapi.optimizers.Adam(0.01),
                      loss="sparse_categorical_crossentropy")
    x, y = data(kind)
    callbacks = [hiapi.callbacks.BackupAndRestore(f"{out}/backup", delete_checkpoint=False)] \
        if backup else []
    model.fit(x, y, batch_size=24, epochs=epochs, verbose=0, callbacks=callbacks)
    return strategy.rank, model.get_weights()


if __name__ == "__main__":
    out, kind = sys.argv[1], sys.argv[2]
    hiapi.config.set_floatx("float64")
    rank, straight = train(out, kind, 2, backup=False)
    train(out, kind, 1, backup=True)
    _, resumed = train(out, kind, 2, backup=True)
    np.savez(f"{out}/straight_{rank}.npz", *straight)
    np.savez(f"{out}/resumed_{rank}.npz", *resumed)
