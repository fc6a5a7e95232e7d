"""An LSTM reading each MNIST image as a sequence of 28 rows of 28 pixels.

    .venv/bin/python examples/mnist_lstm.py           # 5 epochs, ~98% test accuracy
    .venv/bin/python examples/mnist_lstm.py --epochs 1 --train-samples 1000 --units 32
"""
import argparse
import time

import hiapi
from hiapi import layers


def build_model(units=128):
    return hiapi.Sequential([
        hiapi.Input(shape=(28, 28)),
        layers.LSTM(units),
        layers.Dense(10, activation="softmax"),
    ])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--epochs", type=int, default=5, help="passes over the training data")
    parser.add_argument("--batch-size", type=int, default=128, help="images per step")
    parser.add_argument("--units", type=int, default=128, help="LSTM state size")
    parser.add_argument("--train-samples", type=int, default=None,
                        help="train on the first N images only; all 60,000 when not given")
    parser.add_argument("--seed", type=int, default=1, help="random seed (weights, batch order)")
    parser.add_argument("--verbose", type=int, default=1, choices=[0, 1, 2],
                        help="0 quiet, 1 progress bar, 2 one line per epoch")
    args = parser.parse_args(argv)

    hiapi.utils.set_random_seed(args.seed)
    (x_train, y_train), (x_test, y_test) = hiapi.datasets.mnist.load_data()
    x_train, y_train = x_train[:args.train_samples] / 255.0, y_train[:args.train_samples]
    model = build_model(args.units)
    model.compile(optimizer=hiapi.optimizers.Adam(2e-3),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    start = time.perf_counter()
    model.fit(x_train, y_train, batch_size=args.batch_size, epochs=args.epochs,
              validation_split=0.1, verbose=args.verbose)
    seconds = time.perf_counter() - start
    loss, accuracy = model.evaluate(x_test / 255.0, y_test, verbose=0)
    print(f"test loss {loss:.4f} - test accuracy {accuracy:.4f} - "
          f"{seconds / args.epochs:.1f} s/epoch")
    return accuracy


if __name__ == "__main__":
    main()
