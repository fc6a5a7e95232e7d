"""Gradient compression: bytes sent per step, compression ratio and accuracy, per method.

    mpiexec -n 2 python benchmarks/compression.py --model cnn --steps 30       # bytes/ratio
    mpiexec -n 2 python benchmarks/compression.py --model mlp --epochs 5 --methods none dgc

Each method trains the same model from the same seed on real MNIST under a
``hiapi.distribute.Strategy``; rank 0 prints one JSON line per method with the bytes this worker
sent per step, the ratio dense / sent, the test accuracy and the seconds taken.
"""
import argparse
import json
import time

import hiapi
from hiapi import layers

OPTIONS = {"topk": {"ratio": 0.01}, "threshold": {"threshold": 0.01},
           "dgc": {"sparsity": 0.999}, "qsgd": {"levels": 127}}


def build(kind):
    if kind == "cnn":           # the Keras MNIST convnet
        return hiapi.Sequential([
            hiapi.Input(shape=(28, 28, 1)), layers.Conv2D(32, 3, activation="relu"),
            layers.MaxPooling2D(), layers.Conv2D(64, 3, activation="relu"),
            layers.MaxPooling2D(), layers.Flatten(), layers.Dropout(0.5),
            layers.Dense(10, activation="softmax")])
    return hiapi.Sequential([hiapi.Input(shape=(28, 28, 1)), layers.Flatten(),
                             layers.Dense(512, activation="relu"),
                             layers.Dense(10, activation="softmax")])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["cnn", "mlp"], default="cnn")
    parser.add_argument("--methods", nargs="+",
                        default=["none", "fp16", "topk", "threshold", "qsgd", "onebit", "dgc"])
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--steps", type=int, default=None, help="steps per epoch (default all)")
    parser.add_argument("--batch-size", type=int, default=64, help="per worker")
    parser.add_argument("--dgc-warmup-epochs", type=int, default=4,
                        help="0 measures DGC's bytes at its final sparsity from the first step")
    args = parser.parse_args()
    (x, y), (x_test, y_test) = hiapi.datasets.mnist.load_data()
    x, x_test = x[..., None] / 255.0, x_test[..., None] / 255.0
    for method in args.methods:
        hiapi.utils.set_random_seed(0)
        options = dict(OPTIONS.get(method, {}))
        if method == "dgc":
            options["warmup_epochs"] = args.dgc_warmup_epochs
        strategy = hiapi.distribute.Strategy(compression=method, **options)
        with strategy.scope():
            model = build(args.model)
            model.compile(optimizer=hiapi.optimizers.SGD(
                strategy.scale_lr(0.05, base_batch=args.batch_size), momentum=0.9),
                loss="sparse_categorical_crossentropy", metrics=["accuracy"])
        start = time.perf_counter()
        model.fit(x, y, batch_size=args.batch_size, epochs=args.epochs,
                  steps_per_epoch=args.steps, verbose=0)
        seconds = time.perf_counter() - start
        _, accuracy = model.evaluate(x_test, y_test, batch_size=500, verbose=0)
        if strategy.is_chief:
            print(json.dumps({"benchmark": "compression", "model": args.model,
                              "method": method, "workers": strategy.size, "options": options,
                              "epochs": args.epochs,
                              "bytes_per_step": round(strategy.stats.bytes_per_step),
                              "compression_ratio": round(strategy.stats.compression_ratio, 2),
                              "test_accuracy": accuracy, "seconds": round(seconds, 1)}),
                  flush=True)


if __name__ == "__main__":
    main()
