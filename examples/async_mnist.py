"""Asynchronous and decentralised training of the MNIST MLP: parameter servers with bounded
staleness or backup workers, elastic averaging, local SGD.

    .venv/bin/mpiexec -n 4 .venv/bin/python examples/async_mnist.py --method ssp --staleness 4
    .venv/bin/mpiexec -n 4 .venv/bin/python examples/async_mnist.py --method backup
    .venv/bin/mpiexec -n 4 .venv/bin/python examples/async_mnist.py --method easgd --period 4
    .venv/bin/python examples/async_mnist.py --method local_sgd                  # one process

``--method``: ``ps`` (``ParameterServerStrategy``, ``--staleness`` 0 = synchronous, the
default for it), ``ssp`` (the same with ``--staleness`` steps of slack; ``--staleness -1``
means none: Downpour), ``backup`` (synchronous, the last ``--backup-workers`` gradients of each
step dropped), ``easgd`` (``EASGDStrategy(tau=--period)``), ``local_sgd``
(``LocalSGDStrategy(period=--period)``). Parameter-server methods use ``--servers`` ranks as
servers (the last ones) and the rest as workers. The learning rate follows hiapi's tools:
``strategy.scale_lr`` for what one update averages, then a cosine decay over the run. Only
rank 0 prints; ``strategy.stats`` shows staleness and dropped gradients.
"""
import argparse

import hiapi
from hiapi import layers
from hiapi.optimizers import schedules


def make_strategy(args):
    distribute = hiapi.distribute
    if args.method in ("ps", "ssp", "backup"):
        staleness = 0 if args.method != "ssp" else (
            None if args.staleness < 0 else args.staleness)
        return distribute.ParameterServerStrategy(
            servers=args.servers, staleness=staleness,
            backup_workers=args.backup_workers if args.method == "backup" else 0)
    if args.method == "easgd":
        return distribute.EASGDStrategy(tau=args.period)
    return distribute.LocalSGDStrategy(period=args.period)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--method", default="ssp",
                        choices=["ps", "ssp", "backup", "easgd", "local_sgd"],
                        help="how the workers combine their work")
    parser.add_argument("--staleness", type=int, default=4,
                        help="for ssp: steps a worker may run ahead (-1: unbounded)")
    parser.add_argument("--servers", type=int, default=1, help="parameter-server ranks")
    parser.add_argument("--backup-workers", type=int, default=1,
                        help="for backup: gradients each step may go without")
    parser.add_argument("--period", type=int, default=4,
                        help="for easgd and local_sgd: steps between exchanges")
    parser.add_argument("--epochs", type=int, default=3, help="passes over the training data")
    parser.add_argument("--batch-size", type=int, default=64, help="images per step per worker")
    parser.add_argument("--train-samples", type=int, default=None,
                        help="train on the first N images only; all 60,000 when not given")
    parser.add_argument("--verbose", type=int, default=2, choices=[0, 1, 2],
                        help="0 quiet, 1 progress bar, 2 one line per epoch")
    args = parser.parse_args(argv)

    hiapi.utils.set_random_seed(1)
    strategy = make_strategy(args)
    (x_train, y_train), (x_test, y_test) = hiapi.datasets.mnist.load_data()
    x_train, y_train = x_train[:args.train_samples] / 255.0, y_train[:args.train_samples]
    steps = args.epochs * max(1, len(x_train) // (args.batch_size * strategy.size))
    learning_rate = schedules.CosineDecay(
        strategy.scale_lr(0.1, base_batch=128, per_worker_batch=args.batch_size),
        decay_steps=steps * (strategy.size if args.method == "ssp" else 1), alpha=0.1)
    with strategy.scope():
        model = hiapi.Sequential([hiapi.Input(shape=(28, 28)), layers.Flatten(),
                                  layers.Dense(256, activation="relu"),
                                  layers.Dense(10, activation="softmax")])
        model.compile(optimizer=hiapi.optimizers.SGD(learning_rate, momentum=0.9),
                      loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(x_train, y_train, batch_size=args.batch_size, epochs=args.epochs,
              verbose=args.verbose)
    loss, accuracy = model.evaluate(x_test / 255.0, y_test, verbose=0)
    if strategy.is_chief:
        print(f"{args.method}: {strategy.size} worker(s), test accuracy {accuracy:.4f}")
        stats = strategy.stats
        print(f"stats: {stats!r}" if hasattr(stats, "dropped") else
              f"{stats.bytes_per_step / 1e6:.3f} MB sent per step")
    return accuracy


if __name__ == "__main__":
    main()
