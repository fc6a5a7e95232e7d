"""Growing the batch instead of decaying the rate (Smith et al. 2018) on MNIST.

    python benchmarks/batch_growth.py [--samples 60000] [--epochs 6] [--boundaries 2,4]
                                      [--factor 5] [--batch 128] [--lr 0.1]

The README's MLP (Dense 512), SGD with momentum 0.9, two runs from the same seed:

    decay   batch_size fixed, the rate divided by ``factor`` at each boundary epoch
            (``LearningRateScheduler``)
    grow    the rate fixed, the batch multiplied by ``factor`` there instead
            (``BatchSizeScheduler.instead_of_decay``)

One JSON line per run: train steps taken, test accuracy and loss, seconds. The paper's claim:
the same accuracy in fewer (and larger) steps.
"""
import argparse
import json
import time

import numpy as np

import hiapi
from hiapi import layers
from hiapi.callbacks import BatchSizeScheduler, LearningRateScheduler


class CountSteps(hiapi.callbacks.Callback):
    steps = 0

    def on_train_batch_end(self, batch, logs=None):
        self.steps += 1


def run(kind, args, data):
    (x, y), (x_test, y_test) = data
    hiapi.utils.set_random_seed(0)
    model = hiapi.Sequential([hiapi.Input(shape=(28, 28)), layers.Flatten(),
                              layers.Dense(512, activation="relu"),
                              layers.Dense(10, activation="softmax")])
    model.compile(optimizer=hiapi.optimizers.SGD(args.lr, momentum=0.9),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    edges = [int(b) for b in args.boundaries.split(",")]
    if kind == "decay":
        schedule = LearningRateScheduler(
            lambda epoch, lr: args.lr / args.factor ** sum(epoch >= e for e in edges))
    else:
        schedule = BatchSizeScheduler.instead_of_decay(args.batch, edges, args.factor)
    counter = CountSteps()
    start = time.perf_counter()
    model.fit(x, y, batch_size=args.batch, epochs=args.epochs, verbose=0,
              callbacks=[schedule, counter])
    seconds = time.perf_counter() - start
    loss, accuracy = model.evaluate(x_test, y_test, verbose=0)
    return {"run": kind, "steps": counter.steps, "test_accuracy": round(accuracy, 4),
            "test_loss": round(loss, 4), "seconds": round(seconds, 1)}


def load(samples):
    (x, y), (x_test, y_test) = hiapi.datasets.mnist.load_data()
    return ((x[:samples] / 255.0).astype(np.float32), y[:samples]), \
        ((x_test / 255.0).astype(np.float32), y_test)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=60000)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--boundaries", default="2,4")
    parser.add_argument("--factor", type=float, default=5.0)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--lr", type=float, default=0.1)
    args = parser.parse_args()
    data = load(args.samples)
    for kind in ("decay", "grow"):
        print(json.dumps({"benchmark": "batch_growth", **run(kind, args, data)}), flush=True)


if __name__ == "__main__":
    main()
