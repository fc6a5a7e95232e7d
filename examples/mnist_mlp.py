"""Train a multilayer perceptron on MNIST: the README's main job.

    .venv/bin/python examples/mnist_mlp.py       # 3 epochs on all 60,000 images, ~98% test accuracy
    .venv/bin/python examples/mnist_mlp.py --epochs 1 --train-samples 2000   # a quick check

The data comes from the copy bundled with hiapi, so this runs offline.
"""
import argparse
import time

import hiapi
from hiapi import layers


def build_model():
    return hiapi.Sequential([
        hiapi.Input(shape=(28, 28)),
        layers.Flatten(),
        layers.Dense(512, activation="relu"),
        layers.Dense(10, activation="softmax"),
    ])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--epochs", type=int, default=3, help="passes over the training data")
    parser.add_argument("--batch-size", type=int, default=128, help="images per step")
    parser.add_argument("--train-samples", type=int, default=None,
                        help="train on the first N images only; all 60,000 when not given")
    parser.add_argument("--seed", type=int, default=1, help="random seed (weights, batch order)")
    parser.add_argument("--verbose", type=int, default=1, choices=[0, 1, 2],
                        help="0 quiet, 1 progress bar, 2 one line per epoch")
    args = parser.parse_args(argv)

    hiapi.utils.set_random_seed(args.seed)
    (x_train, y_train), (x_test, y_test) = hiapi.datasets.mnist.load_data()
    x_train, y_train = x_train[:args.train_samples], y_train[:args.train_samples]

    model = build_model()
    model.compile(optimizer=hiapi.optimizers.SGD(learning_rate=0.1, momentum=0.9),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    model.summary()
    start = time.perf_counter()
    model.fit(x_train / 255.0, y_train, batch_size=args.batch_size, epochs=args.epochs,
              validation_split=0.1, verbose=args.verbose)
    seconds = time.perf_counter() - start
    loss, accuracy = model.evaluate(x_test / 255.0, y_test, verbose=0)
    print(f"test loss {loss:.4f} - test accuracy {accuracy:.4f} - "
          f"{seconds / args.epochs:.1f} s/epoch ({hiapi.backends.get_backend().name} backend)")
    return accuracy


if __name__ == "__main__":
    main()
