"""A subclassed model on MNIST, trained by the built-in step or by its own train_step (a
GradientTape, optimizer.apply, metrics updated by hand), under a data-parallel Strategy or,
with ``reference``, in one process on the global batch; writes weights and history.

usage: custom_step.py OUT_DIR STEP(builtin|custom) MODE(strategy|reference) RANKS
"""
import contextlib
import json
import sys

import numpy as np

import hiapi
from hiapi import layers


class Classifier(hiapi.Model):
    def __init__(self):
        super().__init__()
        self.flatten = layers.Flatten()
        self.hidden = [layers.Dense(32, activation="relu")]
        self.out = layers.Dense(10, activation="softmax")

    def call(self, inputs, training=None, mask=None):
        x = self.flatten(inputs)
        for layer in self.hidden:
            x = layer(x)
        return self.out(x)


class CustomClassifier(Classifier):
    def train_step(self, data):
        x, y = data
        with hiapi.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(y=y, y_pred=y_pred)
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply(grads, self.trainable_variables)
        for metric in self.metrics:
            if metric.name == "loss":
                metric.update_state(loss)
            else:
                metric.update_state(y, y_pred)
        return {m.name: m.result() for m in self.metrics}


def main(out, step, mode, ranks):
    hiapi.utils.set_random_seed(11)
    (x, y), _ = hiapi.datasets.mnist.load_data()
    x, y = x[:1000] / 255.0, y[:1000]
    strategy = hiapi.distribute.Strategy() if mode == "strategy" else None
    cls = CustomClassifier if step == "custom" else Classifier
    with strategy.scope() if strategy else contextlib.nullcontext():
        model = cls()
        model.compile(optimizer=hiapi.optimizers.SGD(0.1, momentum=0.9),
                      loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    batch = 25 if strategy else 25 * ranks
    history = model.fit(x, y, batch_size=batch, epochs=2, validation_split=0.2, verbose=0)
    rank = strategy.rank if strategy else 0
    np.savez(f"{out}/{step}_{mode}_{rank}.npz", *model.get_weights())
    with open(f"{out}/{step}_{mode}_{rank}.json", "w") as handle:
        json.dump(history.history, handle)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
