"""A subclassed model trained by train_on_batch under Strategy(tensor_parallel=2) (or, with
``pipeline``, one that cannot split it), or in one process with ``reference``; float64; rank 0
writes the losses and weights.

usage: subclassed_parallel.py OUT_DIR MODE(tensor|pipeline|reference)
"""
import contextlib
import json
import sys

import numpy as np

import hiapi
from hiapi import layers


class MLP(hiapi.Model):
    def __init__(self):
        super().__init__()
        self.hidden = layers.Dense(16, activation="relu")
        self.out = layers.Dense(4)

    def call(self, inputs):
        return self.out(self.hidden(inputs))


def main(out, mode):
    hiapi.config.set_floatx("float64")
    hiapi.utils.set_random_seed(1)
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(32, 8)), rng.integers(0, 4, 32)
    strategy = {"tensor": lambda: hiapi.distribute.Strategy(tensor_parallel=2),
                "pipeline": lambda: hiapi.distribute.Strategy(pipeline_stages=2),
                "reference": lambda: None}[mode]()
    with strategy.scope() if strategy else contextlib.nullcontext():
        model = MLP()
        model.build((None, 8))
        model.compile(optimizer=hiapi.optimizers.SGD(0.1),
                      loss=hiapi.losses.SparseCategoricalCrossentropy(from_logits=True))
    losses = [float(model.train_on_batch(x, y)) for _ in range(3)]
    if strategy is not None:
        strategy.consolidate(model)
    if strategy is None or strategy.rank == 0:
        np.savez(f"{out}/{mode}.npz", *model.get_weights())
        with open(f"{out}/{mode}.json", "w") as handle:
            json.dump(losses, handle)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
