"""Train a small MLP under LocalSGDStrategy or EASGDStrategy; each rank saves its weights and
logs. With --reference, every rank also trains the same model in one process on the workers'
global batch (synchronous data-parallel SGD).

usage: local_sgd.py OUT_DIR {local_sgd,easgd} --period H [--alpha A] [--steps K] [--epochs E]
"""
import argparse
import json

import numpy as np

import hiapi
from hiapi import layers

parser = argparse.ArgumentParser()
parser.add_argument("out")
parser.add_argument("method")
parser.add_argument("--period", type=int, default=1)
parser.add_argument("--alpha", type=float, default=None)
parser.add_argument("--steps", type=int, default=None)
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--lr", type=float, default=0.1)
parser.add_argument("--reference", action="store_true")
args = parser.parse_args()

if args.method == "easgd":
    strategy = hiapi.distribute.EASGDStrategy(tau=args.period, alpha=args.alpha)
else:
    strategy = hiapi.distribute.LocalSGDStrategy(period=args.period)
(x, y), _ = hiapi.datasets.mnist.load_data()
x, y = x[:480] / 255.0, y[:480]


def make_model():
    hiapi.utils.set_random_seed(3)
    model = hiapi.Sequential([hiapi.Input(shape=(28, 28)), layers.Flatten(),
                              layers.Dense(16, activation="relu"),
                              layers.Dense(10, activation="softmax")])
    model.compile(optimizer=hiapi.optimizers.SGD(args.lr),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


with strategy.scope():
    model = make_model()
history = model.fit(x, y, batch_size=8, epochs=args.epochs, steps_per_epoch=args.steps,
                    verbose=0)
np.savez(f"{args.out}/weights_{strategy.rank}.npz", *model.get_weights())
if args.reference:
    reference = make_model()
    reference.fit(x, y, batch_size=8 * strategy.size, epochs=args.epochs,
                  steps_per_epoch=args.steps, verbose=0)
    np.savez(f"{args.out}/reference_{strategy.rank}.npz", *reference.get_weights())
with open(f"{args.out}/record_{strategy.rank}.json", "w") as handle:
    json.dump({"history": history.history, "bytes": strategy.stats.sent}, handle)
