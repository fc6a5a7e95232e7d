"""A training loop written from scratch, Horovod's way: each rank a share of every global
batch, its tape wrapped in ``DistributedGradientTape``, rank 0's weights broadcast first
(rank 1 starts from other weights on purpose). With ``reference``, one process on the global
batch. Writes the weights and the losses.

usage: loop_from_scratch.py OUT_DIR STYLE(eager|function) MODE(mpi|reference)
"""
import json
import sys

import numpy as np

import hiapi
from hiapi import layers


def main(out, style, mode):
    communicator = hiapi.distribute.world() if mode == "mpi" else None
    rank, size = (communicator.rank, communicator.size) if communicator else (0, 1)
    hiapi.utils.set_random_seed(11 + rank)          # rank 1: other weights, until broadcast
    model = hiapi.Sequential([hiapi.Input(shape=(784,)), layers.Dense(32, activation="relu"),
                              layers.Dense(10)])
    scalar = hiapi.Variable(np.float32(rank))            # a 0-d variable keeps its shape
    hiapi.distribute.broadcast_variables(model.variables + [scalar], root_rank=0)
    assert scalar.shape == () and float(scalar.numpy()) == 0.0
    optimizer = hiapi.optimizers.SGD(0.1, momentum=0.9)
    loss_fn = hiapi.losses.SparseCategoricalCrossentropy(from_logits=True)
    (x, y), _ = hiapi.datasets.mnist.load_data()
    x, y = x[:800].reshape(-1, 784).astype("float32") / 255.0, y[:800]

    def step(xb, yb):
        with hiapi.GradientTape() as tape:
            loss_value = loss_fn(yb, model(xb, training=True))
        if mode == "mpi":
            tape = hiapi.distribute.DistributedGradientTape(tape)
        grads = tape.gradient(loss_value, model.trainable_weights)
        optimizer.apply(grads, model.trainable_weights)
        return loss_value

    step = hiapi.function(step) if style == "function" else step
    losses = []
    for start in range(0, len(x), 50):                # a global batch of 50, shared out
        xb, yb = x[start:start + 50], y[start:start + 50]
        share = slice(rank * 50 // size, (rank + 1) * 50 // size)
        losses.append(float(step(xb[share], yb[share])))
    np.savez(f"{out}/{style}_{mode}_{rank}.npz", *model.get_weights())
    with open(f"{out}/{style}_{mode}_{rank}.json", "w") as handle:
        json.dump(losses, handle)


if __name__ == "__main__":
    main(*sys.argv[1:4])
