"""Data-parallel training of the MNIST MLP with hiapi.distribute.

    .venv/bin/mpiexec -n 2 .venv/bin/python examples/distributed_mnist.py          # allreduce
    .venv/bin/mpiexec -n 2 .venv/bin/python examples/distributed_mnist.py --compression dgc
    .venv/bin/python examples/distributed_mnist.py                                 # one process

``--compression dgc`` is Deep Gradient Compression at 99.9 % sparsity once its warm-up
epochs have ramped it up.

``--batch-size`` is per worker; the learning rate follows the linear scaling rule with a
gradual warmup (Goyal et al. 2017). Only rank 0 prints.
"""
import argparse

import hiapi
from hiapi import layers
from hiapi.optimizers import schedules


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--epochs", type=int, default=3, help="passes over the training data")
    parser.add_argument("--batch-size", type=int, default=64, help="images per step per worker")
    parser.add_argument("--compression", default="none",
                        choices=["none", "fp16", "topk", "threshold", "qsgd", "onebit", "dgc"],
                        help="gradient compression (hiapi.distribute.Strategy)")
    parser.add_argument("--train-samples", type=int, default=None,
                        help="train on the first N images only; all 60,000 when not given")
    parser.add_argument("--verbose", type=int, default=2, choices=[0, 1, 2],
                        help="0 quiet, 1 progress bar, 2 one line per epoch")
    args = parser.parse_args(argv)

    hiapi.utils.set_random_seed(1)
    options = {"sparsity": 0.999} if args.compression == "dgc" else {}
    strategy = hiapi.distribute.Strategy(compression=args.compression, **options)
    (x_train, y_train), (x_test, y_test) = hiapi.datasets.mnist.load_data()
    x_train, y_train = x_train[:args.train_samples] / 255.0, y_train[:args.train_samples]
    steps_per_epoch = len(x_train) // (args.batch_size * strategy.size)
    learning_rate = schedules.LinearWarmup(
        strategy.scale_lr(0.05, base_batch=args.batch_size), warmup_steps=steps_per_epoch // 2)
    with strategy.scope():
        model = hiapi.Sequential([hiapi.Input(shape=(28, 28)), layers.Flatten(),
                                  layers.Dense(512, activation="relu"),
                                  layers.Dense(10, activation="softmax")])
        model.compile(optimizer=hiapi.optimizers.SGD(learning_rate, momentum=0.9),
                      loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(x_train, y_train, batch_size=args.batch_size, epochs=args.epochs,
              verbose=args.verbose)
    loss, accuracy = model.evaluate(x_test / 255.0, y_test, verbose=0)
    if strategy.is_chief:
        print(f"{strategy.size} worker(s), compression {args.compression}: test accuracy "
              f"{accuracy:.4f}, {strategy.stats.bytes_per_step / 1e6:.3f} MB sent per step "
              f"(compression ratio {strategy.stats.compression_ratio:.1f})")
    return accuracy


if __name__ == "__main__":
    main()
