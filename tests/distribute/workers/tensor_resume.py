"""``Strategy(tensor_parallel=<ranks>)``, or with PIPELINE_STAGES a pipeline x tensor grid
``Strategy(pipeline_stages=S, tensor_parallel=<ranks>/S)``: 2 epochs straight, and 1 epoch with
a backup then a new run resumed from it for epoch 2; each rank writes both runs' weights.

usage: tensor_resume.py OUT_DIR MODEL(mlp|cnn|embedding) [PIPELINE_STAGES]
"""
import sys

import numpy as np

import hiapi
from pipeline import data, make_model


def train(out, kind, epochs, backup, stages):
    size = hiapi.distribute.world().size
    strategy = hiapi.distribute.Strategy(tensor_parallel=size) if stages is None else \
        hiapi.distribute.Strategy(pipeline_stages=stages, tensor_parallel=size // stages,
                                  micro_batches=2)
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
    stages = int(sys.argv[3]) if len(sys.argv) > 3 else None
    hiapi.config.set_floatx("float64")
    rank, straight = train(out, kind, 2, False, stages)
    train(out, kind, 1, True, stages)
    _, resumed = train(out, kind, 2, True, stages)
    np.savez(f"{out}/straight_{rank}.npz", *straight)
    np.savez(f"{out}/resumed_{rank}.npz", *resumed)
