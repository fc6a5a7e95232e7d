"""Subclassed models (``class M(hiapi.Model)`` with layers assigned in ``__init__`` and its own
``call``), written as in Keras's "Making new layers and models via subclassing" guide."""
import io
import os
import subprocess
import zipfile

import numpy as np
import pytest

import hiapi
from hiapi import layers


class MLP(hiapi.Model):
    def __init__(self, units=16, classes=3, **kwargs):
        super().__init__(**kwargs)
        self.units, self.classes = units, classes
        self.hidden = layers.Dense(units, activation="relu")
        self.out = layers.Dense(classes)

    def call(self, inputs, training=None, mask=None):
        return self.out(self.hidden(inputs))

    def get_config(self):
        return {**super().get_config(), "units": self.units, "classes": self.classes}


def blobs(n=192, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    x = rng.normal(size=(n, 4)).astype("float32") + np.eye(3, 4, dtype="float32")[y] * 3
    return x, y


def compiled(model):
    model.compile(optimizer=hiapi.optimizers.Adam(0.02),
                  loss=hiapi.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    return model


def test_fit_evaluate_predict_learn_from_the_data_shapes():
    x, y = blobs()
    model = compiled(MLP())
    assert not model.built and model.weights == []
    history = model.fit(x, y, epochs=5, batch_size=32, verbose=0)
    assert model.built and len(model.weights) == 4
    assert history.history["loss"][-1] < history.history["loss"][0]
    assert model.evaluate(x, y, verbose=0)[1] > 0.9
    assert model.predict(x, verbose=0).shape == (192, 3)
    assert np.all(np.isfinite(model.train_on_batch(x[:8], y[:8])))
    assert len(model.test_on_batch(x[:8], y[:8])) == 2
    np.testing.assert_allclose(model.predict_on_batch(x[:8]), model.predict(x[:8], verbose=0),
                               rtol=1e-5)


def test_built_by_a_call_or_by_build_then_summary():
    called = MLP()
    out = called(np.ones((2, 4), "float32"))
    assert out.shape == (2, 3) and called.built
    built = MLP()
    built.build((None, 4))
    assert built.built and [w.shape for w in built.weights] == [(4, 16), (16,), (16, 3), (3,)]
    lines = []
    built.summary(print_fn=lines.append)
    assert "Total params: 131" in lines[0] and "dense" in lines[0]


def test_lists_dicts_and_nested_models_are_tracked():
    class Blocks(hiapi.Model):
        def __init__(self):
            super().__init__()
            self.blocks = [layers.Dense(8, activation="relu") for _ in range(2)]
            self.heads = {"a": layers.Dense(1), "b": layers.Dense(2)}
            self.later = []
            self.later.append(layers.Dense(8))
            self.inner = MLP(units=4, classes=8)

        def call(self, inputs):
            x = inputs
            for block in self.blocks:
                x = block(x)
            x = self.inner(self.later[0](x))
            return {"a": self.heads["a"](x), "b": self.heads["b"](x)}

    model = Blocks()
    model.compile(optimizer="adam", loss="mse")
    x = np.random.default_rng(0).normal(size=(32, 5)).astype("float32")
    y = {"a": np.zeros((32, 1), "float32"), "b": np.ones((32, 2), "float32")}
    history = model.fit(x, y, epochs=3, batch_size=8, verbose=0)
    assert len(model.trainable_weights) == 2 * 2 + 2 * 2 + 2 + 4
    assert history.history["loss"][-1] < history.history["loss"][0]
    predicted = model.predict(x, verbose=0)
    assert sorted(predicted) == ["a", "b"] and predicted["b"].shape == (32, 2)


def test_several_inputs_and_dict_inputs():
    class TwoInputs(hiapi.Model):
        def __init__(self):
            super().__init__()
            self.a, self.b, self.out = layers.Dense(4), layers.Dense(4), layers.Dense(1)

        def call(self, inputs):
            if isinstance(inputs, dict):
                first, second = inputs["image"], inputs["stats"]
            else:
                first, second = inputs
            return self.out(self.a(first) + self.b(second))

    rng = np.random.default_rng(1)
    first, second = rng.normal(size=(40, 3)), rng.normal(size=(40, 2))
    y = first[:, :1] - second[:, 1:]
    as_list = TwoInputs()
    as_list.compile(optimizer=hiapi.optimizers.Adam(0.05), loss="mse")
    history = as_list.fit([first, second], y, epochs=10, batch_size=8, verbose=0)
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]
    as_dict = TwoInputs()
    as_dict.compile(optimizer="adam", loss="mse")
    as_dict.fit({"stats": second, "image": first}, y, epochs=1, batch_size=8, verbose=0)
    assert as_dict.predict({"image": first, "stats": second}, verbose=0).shape == (40, 1)


def test_generator_and_validation_data():
    x, y = blobs()

    def batches():
        while True:
            for start in range(0, 192, 32):
                yield x[start:start + 32], y[start:start + 32]

    model = compiled(MLP())
    history = model.fit(batches(), steps_per_epoch=6, epochs=3, validation_data=(x, y),
                        verbose=0)
    assert history.history["val_accuracy"][-1] > 0.8


def test_a_layer_created_inside_call_is_an_error():
    class Careless(hiapi.Model):
        def call(self, inputs):
            return layers.Dense(2)(inputs)

    model = Careless()
    model.compile(optimizer="sgd", loss="mse")
    with pytest.raises(ValueError, match=r"Careless.*does not track.*in __init__"):
        model.fit(np.ones((4, 3)), np.ones((4, 2)), verbose=0)


def test_build_needs_a_shape():
    with pytest.raises(ValueError, match="input_shape"):
        MLP().build()


@hiapi.saving.register_keras_serializable(package="tests")
class SavedMLP(MLP):
    pass


def test_save_and_load_a_registered_subclassed_model(tmp_path):
    x, y = blobs()
    model = compiled(SavedMLP(units=8))
    model.fit(x, y, epochs=2, batch_size=32, verbose=0)
    model.save(tmp_path / "m.hiapi")
    loaded = hiapi.models.load_model(tmp_path / "m.hiapi")
    assert type(loaded) is SavedMLP and loaded.units == 8
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0),
                               rtol=1e-6)
    loaded.fit(x, y, epochs=1, batch_size=32, verbose=0)      # optimizer state came back


def test_saving_needs_a_config_the_constructor_takes(tmp_path):
    class NoConfig(hiapi.Model):
        def __init__(self, width):
            super().__init__()
            self.dense = layers.Dense(width)

        def call(self, inputs):
            return self.dense(inputs)

    model = NoConfig(3)
    model(np.ones((1, 2), "float32"))
    with pytest.raises(ValueError, match="define get_config"):
        model.save(tmp_path / "m.hiapi")


@hiapi.saving.register_keras_serializable(package="tests")
class Heads(hiapi.Model):
    """Layers as an attribute, in a list and in a dict: Keras 3 files their weights under
    ``layers/``, ``blocks/`` and ``heads/``."""

    def __init__(self, units=4, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.zeta = layers.Dense(units)
        self.blocks = [layers.Dense(3), layers.Dense(3)]
        self.heads = {"b": layers.Dense(2), "a": layers.Dense(1)}

    def call(self, x):
        for block in self.blocks:
            x = block(x)
        x = self.zeta(x)
        return self.heads["a"](x) + self.heads["b"](x)[:, :1]

    def get_config(self):
        return {**super().get_config(), "units": self.units}


KERAS_HEADS = '''
import os, sys
os.environ["KERAS_BACKEND"] = "numpy"
import warnings
import keras, numpy as np
@keras.saving.register_keras_serializable(package="tests")
class Heads(keras.Model):
    def __init__(self, units=4, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.zeta = keras.layers.Dense(units)
        self.blocks = [keras.layers.Dense(3), keras.layers.Dense(3)]
        self.heads = {"b": keras.layers.Dense(2), "a": keras.layers.Dense(1)}
    def call(self, x):
        for block in self.blocks:
            x = block(x)
        x = self.zeta(x)
        return self.heads["a"](x) + self.heads["b"](x)[:, :1]
    def get_config(self):
        return {**super().get_config(), "units": self.units}
# Keras's own warnings (a weight not loaded, a model it could not build) fail the test, but not
# numpy's: Keras's numpy backend builds the model by running it on np.empty arrays, and the
# garbage in them sometimes overflows a matmul ("overflow encountered in matmul"), which made
# the build fail now and then; the outputs are compared below all the same.
warnings.simplefilter("error")
warnings.filterwarnings("ignore", category=RuntimeWarning)
for name in ("heads", "wrapped"):
    model = keras.models.load_model(f"{sys.argv[1]}/{name}.keras")
    np.save(f"{sys.argv[1]}/keras_{name}.npy",
            model.predict(np.load(sys.argv[1] + "/x.npy"), verbose=0))
'''


def test_keras_file_of_a_subclassed_model_in_keras_layout(tmp_path):
    h5py = pytest.importorskip("h5py")
    x = np.random.default_rng(0).normal(size=(8, 5)).astype("float32")
    model = Heads()
    model.compile(optimizer="adam", loss="mse")
    model.fit(x, np.ones((8, 1)), verbose=0)
    model.save(tmp_path / "heads.keras")
    with zipfile.ZipFile(tmp_path / "heads.keras") as archive:
        with h5py.File(io.BytesIO(archive.read("model.weights.h5")), "r") as file:
            found = []
            file.visit(lambda name: found.append(name) if name.endswith("/vars/0") else None)
    assert sorted(found) == ["blocks/dense/vars/0", "blocks/dense_1/vars/0",
                             "heads/dense/vars/0", "heads/dense_1/vars/0",
                             "layers/dense/vars/0", "optimizer/vars/0"]
    loaded = hiapi.models.load_model(tmp_path / "heads.keras")
    assert type(loaded) is Heads and loaded.units == 4
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0),
                               rtol=1e-6)
    loaded.fit(x, np.ones((8, 1)), verbose=0)
    inputs = hiapi.Input(shape=(5,))
    wrapped = hiapi.Model(inputs, Heads()(inputs))       # inside a functional model
    wrapped.save(tmp_path / "wrapped.keras")
    np.testing.assert_allclose(hiapi.models.load_model(tmp_path / "wrapped.keras").predict(
        x, verbose=0), wrapped.predict(x, verbose=0), rtol=1e-6)
    python = os.environ.get("HIAPI_KERAS_PYTHON")
    if python:                            # real Keras reads it with the class registered
        np.save(tmp_path / "x.npy", x)
        script = tmp_path / "keras_heads.py"
        script.write_text(KERAS_HEADS)
        subprocess.run([python, str(script), str(tmp_path)], check=True, timeout=300)
        for name, saved in (("heads", model), ("wrapped", wrapped)):
            np.testing.assert_allclose(np.load(tmp_path / f"keras_{name}.npy"),
                                       saved.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
