"""Writes the .keras files under tests/saving/data/keras/ with real Keras 3, and
keras_predictions.npz: Keras's predictions of each model on fixed inputs.
tests/saving/test_keras_files.py loads the files with hiapi and compares.

Each model is trained for one step first, so batch-norm statistics and optimizer slots are not
their initial values. Run by hand where Keras is installed (not a test dependency):
    pip install keras jax h5py
    KERAS_BACKEND=jax python tests/saving/data/make_keras_models.py   (numpy cannot train)
"""
import pathlib

import numpy as np

import keras
from keras import layers

HERE = pathlib.Path(__file__).parent
rng = np.random.default_rng(0)
keras.utils.set_random_seed(0)


def mlp():
    model = keras.Sequential([keras.Input((8,)), layers.Dense(16, activation="relu"),
                              layers.Dense(3, activation="softmax")], name="mlp")
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    return model, (4, 8), lambda n: rng.integers(0, 3, n)


def mnist_convnet():
    model = keras.Sequential([
        keras.Input((28, 28, 1)), layers.Conv2D(32, 3, activation="relu"),
        layers.MaxPooling2D(2), layers.Conv2D(64, 3, activation="relu"),
        layers.MaxPooling2D(2), layers.Flatten(), layers.Dropout(0.5),
        layers.Dense(10, activation="softmax")], name="mnist_convnet")
    model.compile(optimizer="sgd", loss="categorical_crossentropy", metrics=["accuracy"])
    return model, (2, 28, 28, 1), lambda n: np.eye(10)[rng.integers(0, 10, n)]


def batch_norm():
    model = keras.Sequential([
        keras.Input((6, 6, 2)), layers.Conv2D(4, 3, padding="same", use_bias=False),
        layers.BatchNormalization(momentum=0.5), layers.Activation("relu"),
        layers.GlobalAveragePooling2D(), layers.Dense(6), layers.BatchNormalization(),
        layers.Dense(1)], name="batch_norm")
    model.compile(optimizer=keras.optimizers.RMSprop(learning_rate=0.01), loss="mse",
                  metrics=["mae"])
    return model, (4, 6, 6, 2), lambda n: rng.normal(size=(n, 1))


def recurrent():
    inputs = keras.Input((5, 3))
    x = layers.LSTM(4, return_sequences=True)(inputs)
    x = layers.GRU(3)(x)
    model = keras.Model(inputs, layers.Dense(2)(x), name="recurrent")
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.05, momentum=0.9),
                  loss="mse")
    return model, (3, 5, 3), lambda n: rng.normal(size=(n, 2))


def multi_output():
    image = keras.Input((8,), name="features")
    extra = keras.Input((3,), name="extra")
    shared = layers.Dense(6, activation="tanh", name="trunk")(image)
    merged = layers.Concatenate()([shared, extra])
    score = layers.Dense(1, name="score")(merged)
    label = layers.Dense(4, activation="softmax", name="label")(shared)
    residual = layers.Add()([layers.Dense(6, name="branch")(merged), shared])
    model = keras.Model([image, extra], [score, label, residual], name="multi_output")
    model.compile(optimizer="adam", loss=["mse", "sparse_categorical_crossentropy", "mae"],
                  loss_weights=[1.0, 0.5, 0.1])
    return model, [(4, 8), (4, 3)], lambda n: [rng.normal(size=(n, 1)),
                                                rng.integers(0, 4, n), rng.normal(size=(n, 6))]


def wrappers():
    inputs = keras.Input((5, 3))
    x = layers.Bidirectional(layers.LSTM(3, return_sequences=True))(inputs)
    x = layers.TimeDistributed(layers.Dense(4, activation="relu"))(x)
    x = layers.Bidirectional(layers.GRU(2), merge_mode="sum")(x)
    model = keras.Model(inputs, layers.Dense(2)(x), name="wrappers")
    model.compile(optimizer="adam", loss="mse")
    return model, (3, 5, 3), lambda n: rng.normal(size=(n, 2))


def cells():
    """RNN over a list of cells (stacked) and over one cell, as keras_test_models.cell_zoo."""
    inputs = keras.Input((5, 3))
    x = layers.RNN([layers.GRUCell(4), layers.SimpleRNNCell(3), layers.GRUCell(2)],
                   return_sequences=True)(inputs)
    x = layers.RNN(layers.LSTMCell(3, dropout=0.1), go_backwards=True)(x)
    model = keras.Model(inputs, layers.Dense(2)(x), name="cells")
    model.compile(optimizer="rmsprop", loss="mse")
    return model, (3, 5, 3), lambda n: rng.normal(size=(n, 2))


def mixed_precision():
    """keras_test_models.mixed_precision: compile wraps Adam in a LossScaleOptimizer (Keras's
    Sequential takes its policy from the global one when made)."""
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        model = keras.Sequential([keras.Input((6,)),
                                  layers.Dense(8, activation="relu", dtype="float32"),
                                  layers.Dense(2, dtype="float32")], name="mixed_precision")
    finally:
        keras.mixed_precision.set_global_policy("float32")
    model.compile(optimizer="adam", loss="mse")
    return model, (4, 6), lambda n: rng.normal(size=(n, 2))


def inputs_like(shapes):
    if isinstance(shapes, list):
        return [inputs_like(s) for s in shapes]
    return rng.normal(size=shapes).astype("float32")


def main():
    (HERE / "keras").mkdir(exist_ok=True)
    out = {"keras_version": np.array(keras.__version__)}
    for build in (mlp, mnist_convnet, batch_norm, recurrent, multi_output, wrappers,
                  cells, mixed_precision):
        model, shapes, targets = build()
        x = inputs_like(shapes)
        n = len(x[0]) if isinstance(x, list) else len(x)
        model.train_on_batch(x, targets(n))
        model.save(HERE / "keras" / f"{build.__name__}.keras")
        y = model.predict(x, verbose=0)
        for i, xi in enumerate(x if isinstance(x, list) else [x]):
            out[f"{build.__name__}/x{i}"] = xi
        for i, yi in enumerate(y if isinstance(y, list) else [y]):
            out[f"{build.__name__}/y{i}"] = np.asarray(yi)
    np.savez(HERE / "keras_predictions.npz", **out)
    print("wrote", sorted(out))


if __name__ == "__main__":
    main()
