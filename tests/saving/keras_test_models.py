"""The five models of the Keras-format tests, built with hiapi (tests/saving/data/
make_keras_models.py builds the same ones with Keras): an MLP, the MNIST convnet, a
batch-norm model, an LSTM/GRU model and a functional model with two inputs and three outputs.
Each builder returns (compiled model, inputs, targets)."""
import numpy as np

import hiapi
from hiapi import layers


def _rng():
    return np.random.default_rng(1)


def mlp():
    rng = _rng()
    model = hiapi.Sequential([hiapi.Input((8,)), layers.Dense(16, activation="relu"),
                              layers.Dense(3, activation="softmax")], name="mlp")
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    return model, rng.normal(size=(4, 8)).astype("float32"), rng.integers(0, 3, 4)


def mnist_convnet():
    rng = _rng()
    model = hiapi.Sequential([
        hiapi.Input((28, 28, 1)), layers.Conv2D(32, 3, activation="relu"),
        layers.MaxPooling2D(2), layers.Conv2D(64, 3, activation="relu"),
        layers.MaxPooling2D(2), layers.Flatten(), layers.Dropout(0.5),
        layers.Dense(10, activation="softmax")], name="mnist_convnet")
    model.compile(optimizer="sgd", loss="categorical_crossentropy", metrics=["accuracy"])
    x = rng.normal(size=(2, 28, 28, 1)).astype("float32")
    return model, x, np.eye(10, dtype="float32")[rng.integers(0, 10, 2)]


def batch_norm():
    rng = _rng()
    model = hiapi.Sequential([
        hiapi.Input((6, 6, 2)), layers.Conv2D(4, 3, padding="same", use_bias=False),
        layers.BatchNormalization(momentum=0.5), layers.Activation("relu"),
        layers.GlobalAveragePooling2D(), layers.Dense(6), layers.BatchNormalization(),
        layers.Dense(1)], name="batch_norm")
    model.compile(optimizer=hiapi.optimizers.RMSprop(learning_rate=0.01), loss="mse",
                  metrics=["mae"])
    x = rng.normal(size=(4, 6, 6, 2)).astype("float32")
    return model, x, rng.normal(size=(4, 1)).astype("float32")


def recurrent():
    rng = _rng()
    inputs = hiapi.Input((5, 3))
    x = layers.LSTM(4, return_sequences=True)(inputs)
    x = layers.GRU(3)(x)
    model = hiapi.Model(inputs, layers.Dense(2)(x), name="recurrent")
    model.compile(optimizer=hiapi.optimizers.SGD(learning_rate=0.05, momentum=0.9),
                  loss="mse")
    x = rng.normal(size=(3, 5, 3)).astype("float32")
    return model, x, rng.normal(size=(3, 2)).astype("float32")


def multi_output():
    rng = _rng()
    image = hiapi.Input((8,), name="features")
    extra = hiapi.Input((3,), name="extra")
    shared = layers.Dense(6, activation="tanh", name="trunk")(image)
    merged = layers.Concatenate()([shared, extra])
    score = layers.Dense(1, name="score")(merged)
    label = layers.Dense(4, activation="softmax", name="label")(shared)
    residual = layers.Add()([layers.Dense(6, name="branch")(merged), shared])
    model = hiapi.Model([image, extra], [score, label, residual], name="multi_output")
    model.compile(optimizer="adam", loss=["mse", "sparse_categorical_crossentropy", "mae"],
                  loss_weights=[1.0, 0.5, 0.1])
    x = [rng.normal(size=(4, 8)).astype("float32"), rng.normal(size=(4, 3)).astype("float32")]
    y = [rng.normal(size=(4, 1)).astype("float32"), rng.integers(0, 4, 4),
         rng.normal(size=(4, 6)).astype("float32")]
    return model, x, y


def mixed_precision():
    """A mixed_float16 model, so that compile wraps its optimizer in a LossScaleOptimizer
    (written as Keras nests it); its layers compute in float32, so Keras and hiapi agree to
    float32's precision."""
    rng = _rng()
    model = hiapi.Sequential([hiapi.Input((6,)),
                              layers.Dense(8, activation="relu", dtype="float32"),
                              layers.Dense(2, dtype="float32")],
                             name="mixed_precision", dtype="mixed_float16")
    model.compile(optimizer="adam", loss="mse")
    return model, rng.normal(size=(4, 6)).astype("float32"), \
        rng.normal(size=(4, 2)).astype("float32")


MODELS = {build.__name__: build for build in (mlp, mnist_convnet, batch_norm, recurrent,
                                               multi_output, mixed_precision)}


def image_zoo():
    """Most image layers Keras and hiapi share, with random weights (untrained, uncompiled)."""
    rng = _rng()
    inputs = hiapi.Input((8, 8, 3))
    x = layers.Rescaling(0.5, offset=0.1)(inputs)
    x = layers.RandomFlip()(x)                        # identity at inference, in both
    x = layers.ZeroPadding2D(1)(x)
    x = layers.SeparableConv2D(4, 3, activation="relu")(x)
    x = layers.DepthwiseConv2D(3, depth_multiplier=2)(x)
    x = layers.GroupNormalization(groups=4)(x)
    x = layers.Conv2DTranspose(3, 3, strides=2, padding="same")(x)
    x = layers.UpSampling2D(2)(x)
    x = layers.Cropping2D(2)(x)
    a = layers.AveragePooling2D(2)(x)
    b = layers.MaxPooling2D(2)(x)
    x = layers.Maximum()([a, b])
    x = layers.Subtract()([layers.GlobalMaxPooling2D()(x), layers.GlobalAveragePooling2D()(x)])
    x = layers.Multiply()([x, layers.Activation("sigmoid")(x)])
    x = layers.Average()([x, layers.Minimum()([x, layers.Identity()(x)])])
    x = layers.LayerNormalization()(layers.Dense(5)(x))
    model = hiapi.Model(inputs, layers.Dense(2, activation="softmax")(x), name="image_zoo")
    _randomize(model, rng)
    return model, rng.normal(size=(2, 8, 8, 3)).astype("float32"), None


def sequence_zoo():
    """Most sequence layers Keras and hiapi share (wrappers, attention), with random
    weights."""
    rng = _rng()
    tokens = hiapi.Input((6,))
    x = layers.Embedding(10, 4)(tokens)
    x = layers.Conv1D(4, 3, padding="same", activation="tanh")(x)
    x = layers.SeparableConv1D(4, 3, padding="same")(x)
    x = layers.DepthwiseConv1D(3, padding="same")(x)
    x = layers.Conv1DTranspose(3, 2, strides=1)(x)
    x = layers.Cropping1D(1)(x)
    masked = layers.SimpleRNN(3)(layers.Masking(0.0)(x))
    x = layers.GaussianNoise(0.1)(x)
    x = layers.SpatialDropout1D(0.2)(x)
    x = layers.SimpleRNN(4, return_sequences=True)(x)
    x = layers.Bidirectional(layers.GRU(2, return_sequences=True), merge_mode="ave")(x)
    x = layers.TimeDistributed(layers.Dense(4))(x)
    x = layers.MultiHeadAttention(2, 3)(x, x, use_causal_mask=True)
    x = layers.MaxPooling1D(2)(layers.AveragePooling1D(1)(x))
    x = layers.Permute((2, 1))(x)
    x = layers.Reshape((-1,))(x)
    x = layers.Dropout(0.3)(layers.GaussianDropout(0.1)(x))
    x = layers.RepeatVector(2)(layers.Dense(3)(x))
    y = layers.Dot(axes=2)([x, x])
    z = layers.Flatten()(layers.GlobalMaxPooling1D()(x))
    x = layers.Concatenate()([layers.Flatten()(y), z, layers.GlobalAveragePooling1D()(x),
                              masked])
    model = hiapi.Model(tokens, layers.Dense(2)(x), name="sequence_zoo")
    _randomize(model, rng)
    return model, rng.integers(0, 10, (3, 6)).astype("float32"), None


def nested_compiled():
    """A Sequential block called twice inside a functional model; regularizer, constraint and
    initializer objects; a learning-rate schedule, loss and metric objects."""
    rng = _rng()
    block = hiapi.Sequential([hiapi.Input((4,)), layers.Dense(
        3, kernel_regularizer=hiapi.regularizers.L2(0.01),
        kernel_constraint=hiapi.constraints.MaxNorm(2.0), activity_regularizer="l1",
        kernel_initializer=hiapi.initializers.VarianceScaling(2.0, "fan_out", "uniform",
                                                              seed=3))], name="block")
    inputs = hiapi.Input((4,))
    outputs = layers.Dense(2)(layers.Concatenate()([block(inputs), block(inputs)]))
    model = hiapi.Model(inputs, outputs, name="nested_compiled")
    schedule = hiapi.optimizers.schedules.ExponentialDecay(0.01, 10, 0.9)
    model.compile(optimizer=hiapi.optimizers.Adam(learning_rate=schedule),
                  loss=hiapi.losses.Huber(delta=0.5),
                  metrics=[hiapi.metrics.MeanAbsoluteError(name="m")])
    x = rng.normal(size=(3, 4)).astype("float32")
    return model, x, rng.normal(size=(3, 2)).astype("float32")


@hiapi.saving.register_keras_serializable(package="hiapi_tests")
class ScaleShift(layers.Layer):
    """A custom layer with weights and a constructor argument; keras_reference.py registers
    a Keras class under the same name, so Keras loads hiapi's file."""

    def __init__(self, factor=1.0, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor

    def build(self, input_shape):
        self.scale = self.add_weight(shape=(input_shape[-1],), initializer="ones",
                                     name="scale")
        self.shift = self.add_weight(shape=(input_shape[-1],), initializer="zeros",
                                     name="shift")

    def call(self, inputs):
        return (inputs * self.scale + self.shift) * self.factor

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


def custom_layer():
    """A registered custom layer between built-in ones, in a functional model."""
    rng = _rng()
    inputs = hiapi.Input((4,))
    outputs = layers.Dense(2)(ScaleShift(factor=2.0)(layers.Dense(4)(inputs)))
    model = hiapi.Model(inputs, outputs, name="custom_layer")
    _randomize(model, rng)
    return model, rng.normal(size=(3, 4)).astype("float32"), None


def activation_zoo():
    """The activation layers with arguments (PReLU's slopes random, shared over one axis)."""
    rng = _rng()
    inputs = hiapi.Input((3, 4))
    x = layers.Dense(4)(inputs)
    x = layers.ReLU(max_value=1.5, negative_slope=0.2, threshold=0.1)(x)
    x = layers.LeakyReLU(negative_slope=0.2)(layers.Dense(4)(x))
    x = layers.ELU(alpha=0.5)(layers.Dense(4)(x))
    x = layers.PReLU(shared_axes=[1])(layers.Dense(4)(x))
    x = layers.Softmax()(layers.Dense(4)(x))      # (Keras 3.15 fails on a list axis read
    model = hiapi.Model(inputs, layers.Softmax(axis=1)(x), name="activation_zoo")   # back)
    _randomize(model, rng)
    return model, rng.normal(size=(2, 3, 4)).astype("float32"), None


def _randomize(model, rng):
    model.set_weights([rng.normal(scale=0.5, size=w.shape).astype(w.dtype)
                       for w in model.get_weights()])


def cell_zoo():
    """``RNN`` over a cell and over a list of cells (Keras stacks them): the cells' weights
    sit under ``rnn/cell/vars`` and ``rnn_1/cell/cells/<cell>/vars``, as Keras keeps them."""
    rng = _rng()
    inputs = hiapi.Input((5, 3))
    x = layers.RNN([layers.GRUCell(4), layers.SimpleRNNCell(3), layers.GRUCell(2)],
                   return_sequences=True)(inputs)
    x = layers.RNN(layers.LSTMCell(3, unit_forget_bias=False), go_backwards=True)(x)
    model = hiapi.Model(inputs, layers.Dense(2)(x), name="cell_zoo")
    _randomize(model, rng)
    return model, rng.normal(size=(3, 5, 3)).astype("float32"), None


ZOO = {build.__name__: build for build in (image_zoo, sequence_zoo, nested_compiled,
                                            custom_layer, activation_zoo, cell_zoo)}


def as_list(value):
    return list(value) if isinstance(value, (list, tuple)) else [value]
