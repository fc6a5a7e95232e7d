"""The classic Keras MNIST convnet (keras.io/examples/vision/mnist_convnet), ported by changing
the import: Conv2D 32 -> MaxPool -> Conv2D 64 -> MaxPool -> Flatten -> Dropout 0.5 -> Dense 10.

    .venv/bin/python examples/mnist_convnet.py        # 15 epochs, ~99.1% test accuracy
    .venv/bin/python examples/mnist_convnet.py --epochs 1 --train-samples 2000
"""
import argparse
import time

import hiapi
from hiapi import layers


def build_model(float32_softmax=False):
    """The convnet; ``float32_softmax`` splits the last layer into Dense(10) and a float32
    softmax, as Keras's mixed precision guide does (benchmarks/mixed_precision.py)."""
    head = [layers.Dense(10), layers.Activation("softmax", dtype="float32")] \
        if float32_softmax else [layers.Dense(10, activation="softmax")]
    return hiapi.Sequential([
        hiapi.Input(shape=(28, 28, 1)),
        layers.Conv2D(32, kernel_size=(3, 3), activation="relu"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        layers.Conv2D(64, kernel_size=(3, 3), activation="relu"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        layers.Flatten(),
        layers.Dropout(0.5),
    ] + head)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--epochs", type=int, default=15, help="passes over the training data")
    parser.add_argument("--batch-size", type=int, default=128, help="images per step")
    parser.add_argument("--train-samples", type=int, default=None,
                        help="train on the first N images only; all 60,000 when not given")
    parser.add_argument("--dataset", choices=["mnist", "fashion_mnist"], default="mnist",
                        help="fashion_mnist is not bundled: see hiapi.datasets")
    parser.add_argument("--seed", type=int, default=1, help="random seed (weights, batch order)")
    parser.add_argument("--dtype-policy", default="float32",
                        choices=["float32", "mixed_float16", "mixed_bfloat16"],
                        help="hiapi.mixed_precision policy (docs/guides/mixed_precision.md)")
    parser.add_argument("--verbose", type=int, default=1, choices=[0, 1, 2],
                        help="0 quiet, 1 progress bar, 2 one line per epoch")
    args = parser.parse_args(argv)

    hiapi.utils.set_random_seed(args.seed)
    dataset = getattr(hiapi.datasets, args.dataset)
    (x_train, y_train), (x_test, y_test) = dataset.load_data()
    x_train = x_train[:args.train_samples, :, :, None] / 255.0
    y_train = y_train[:args.train_samples]
    x_test = x_test[..., None] / 255.0

    hiapi.mixed_precision.set_global_policy(args.dtype_policy)
    model = build_model(float32_softmax=args.dtype_policy != "float32")
    model.compile(loss="categorical_crossentropy", optimizer="adam", metrics=["accuracy"])
    model.summary()
    start = time.perf_counter()
    model.fit(x_train, hiapi.utils.to_categorical(y_train, 10), batch_size=args.batch_size,
              epochs=args.epochs, validation_split=0.1, verbose=args.verbose)
    seconds = time.perf_counter() - start
    loss, accuracy = model.evaluate(x_test, hiapi.utils.to_categorical(y_test, 10), verbose=0)
    print(f"test loss {loss:.4f} - test accuracy {accuracy:.4f} - "
          f"{seconds / args.epochs:.1f} s/epoch")
    return accuracy


if __name__ == "__main__":
    main()
