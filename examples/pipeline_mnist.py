"""Pipeline-parallel training of an MNIST convnet: the model cut into stages, one per rank.

    .venv/bin/mpiexec -n 2 .venv/bin/python examples/pipeline_mnist.py
    .venv/bin/mpiexec -n 4 .venv/bin/python examples/pipeline_mnist.py --stages 4 --schedule gpipe
    .venv/bin/python examples/pipeline_mnist.py                     # one process, every stage

Each global batch of ``--batch-size`` images is split into ``--micro-batches`` micro-batches
that flow through the stages in the chosen schedule; one optimizer update per global batch, so
the result equals one process training on the same batches. The stage boundaries balance the
layers' estimated cost; rank 0 prints the split and the bubble (``strategy.explain()``).
"""
import argparse
import warnings

import hiapi
from hiapi import layers


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--epochs", type=int, default=2, help="passes over the training data")
    parser.add_argument("--batch-size", type=int, default=128, help="images per global batch")
    parser.add_argument("--stages", type=int, default=2,
                        help="pipeline stages: the number of ranks (mpiexec -n)")
    parser.add_argument("--micro-batches", type=int, default=4,
                        help="micro-batches per global batch")
    parser.add_argument("--schedule", default="1f1b", choices=["gpipe", "1f1b"],
                        help="pipeline schedule")
    parser.add_argument("--train-samples", type=int, default=None,
                        help="train on the first N images only; all 60,000 when not given")
    parser.add_argument("--verbose", type=int, default=2, choices=[0, 1, 2],
                        help="0 quiet, 1 progress bar, 2 one line per epoch")
    args = parser.parse_args(argv)

    hiapi.utils.set_random_seed(1)
    with warnings.catch_warnings():          # without mpiexec: one process runs every stage
        warnings.simplefilter("ignore", UserWarning)
        strategy = hiapi.distribute.Strategy(pipeline_stages=args.stages,
                                             micro_batches=args.micro_batches,
                                             schedule=args.schedule)
    (x_train, y_train), (x_test, y_test) = hiapi.datasets.mnist.load_data()
    x_train = x_train[:args.train_samples, :, :, None] / 255.0
    y_train = y_train[:args.train_samples]
    with strategy.scope():
        model = hiapi.Sequential([
            hiapi.Input(shape=(28, 28, 1)),
            layers.Conv2D(16, 3, activation="relu"), layers.MaxPooling2D(2),
            layers.Conv2D(32, 3, activation="relu"), layers.MaxPooling2D(2),
            layers.Flatten(), layers.Dense(128, activation="relu"),
            layers.Dense(10, activation="softmax")])
        model.compile(optimizer=hiapi.optimizers.Adam(1e-3),
                      loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(x_train, y_train, batch_size=args.batch_size, epochs=args.epochs,
              verbose=args.verbose)
    report = strategy.explain(print_fn=print if strategy.is_chief else (lambda text: None))
    loss, accuracy = model.evaluate(x_test[..., None] / 255.0, y_test, verbose=0)
    if strategy.is_chief:
        print(f"{report['stages']} stage(s), {args.micro_batches} micro-batches "
              f"({args.schedule}): test accuracy {accuracy:.4f}")
    return accuracy


if __name__ == "__main__":
    main()
