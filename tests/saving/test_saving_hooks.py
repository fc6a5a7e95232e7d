"""Keras 3's saving hooks, which the customizing-saving guide overrides: ``save_own_variables``
/ ``load_own_variables``, ``save_assets`` / ``load_assets``, ``get_build_config`` /
``build_from_config``, ``get_compile_config`` / ``compile_from_config``, called by the
``.keras`` and ``.weights.h5`` files in Keras's order."""
import json
import os
import zipfile

import numpy as np
import pytest

import hiapi
from hiapi import layers

pytest.importorskip("h5py", reason="h5py (the keras-format extra) is not installed")
import h5py  # noqa: E402

RNG = np.random.default_rng(3)
X = RNG.normal(size=(6, 5)).astype("float32")


@hiapi.saving.register_keras_serializable(package="test_hooks")
class Shifted(layers.Dense):
    """A Dense plus a Variable of its own, saved under a key of its choosing."""
    def __init__(self, units, **kwargs):
        super().__init__(units, **kwargs)
        self.shift = hiapi.Variable(RNG.normal(size=(units,)), name="shift", dtype="float32")

    def save_own_variables(self, store):
        super().save_own_variables(store)
        store["shift"] = self.shift.numpy()

    def load_own_variables(self, store):
        self.shift.assign(store["shift"])
        for index, variable in enumerate(self.weights):
            variable.assign(store[str(index)])

    def call(self, inputs):
        return super().call(inputs) + self.shift


def test_a_variable_held_as_an_attribute_is_a_weight_and_trains():
    layer = Shifted(2)
    model = hiapi.Sequential([hiapi.Input((5,)), layer])
    assert [v.name for v in layer.weights][0] == "shift" and len(model.trainable_weights) == 3
    before = layer.shift.numpy().copy()
    model.compile(optimizer="sgd", loss="mse")
    model.fit(X, np.zeros((6, 2), "float32"), verbose=0)
    assert not np.allclose(layer.shift.numpy(), before)


@pytest.mark.parametrize("suffix", [".keras", ".weights.h5"])
def test_save_and_load_own_variables_are_called_with_keras_keys(tmp_path, suffix):
    model = hiapi.Sequential([hiapi.Input((5,)), Shifted(2, name="shifted")])
    path = tmp_path / f"m{suffix}"
    if suffix == ".keras":
        model.save(path)
        with zipfile.ZipFile(path) as archive:
            archive.extract("model.weights.h5", tmp_path)
        weights_file = tmp_path / "model.weights.h5"
        loaded = hiapi.models.load_model(path)
    else:
        model.save_weights(path)
        weights_file = path
        loaded = hiapi.Sequential([hiapi.Input((5,)), Shifted(2, name="shifted")])
        loaded.load_weights(path)
    with h5py.File(weights_file, "r") as file:
        assert sorted(file["layers/shifted/vars"]) == ["0", "1", "2", "shift"]
    np.testing.assert_array_equal(loaded.layers[0].shift.numpy(), model.layers[0].shift.numpy())
    np.testing.assert_allclose(loaded.predict(X, verbose=0), model.predict(X, verbose=0))


def test_a_weights_mismatch_names_the_file_the_layer_and_the_path(tmp_path):
    hiapi.Sequential([hiapi.Input((5,)), layers.Dense(3)]).save_weights(tmp_path / "a.weights.h5")
    other = hiapi.Sequential([hiapi.Input((4,)), layers.Dense(3, name="narrow")])
    with pytest.raises(ValueError, match=r"a\.weights\.h5: layer 'narrow' weight .* has shape "
                                         r"\(4, 3\), the file holds shape \(5, 3\) \(under "
                                         r"'layers/dense'\)"):
        other.load_weights(tmp_path / "a.weights.h5")


@hiapi.saving.register_keras_serializable(package="test_hooks")
class Worded(layers.Dense):
    """Keeps a sentence in a file of its own inside the archive."""
    def __init__(self, words=None, **kwargs):
        super().__init__(**kwargs)
        self.words = words

    def save_assets(self, folder):
        with open(os.path.join(folder, "words.txt"), "w") as handle:
            handle.write(self.words)

    def load_assets(self, folder):
        with open(os.path.join(folder, "words.txt")) as handle:
            self.words = handle.read().upper()


def test_assets_travel_inside_the_archive_under_the_layers_path(tmp_path):
    model = hiapi.Sequential([hiapi.Input((5,)), Worded(words="a b c", units=2, name="w")])
    model.save(tmp_path / "w.keras")
    with zipfile.ZipFile(tmp_path / "w.keras") as archive:
        assert archive.read("assets/layers/worded/words.txt") == b"a b c"
    assert hiapi.models.load_model(tmp_path / "w.keras").layers[0].words == "A B C"


def test_a_failing_save_assets_leaves_no_file(tmp_path):
    model = hiapi.Sequential([hiapi.Input((5,)), Worded(words=None, units=2)])
    with pytest.raises(TypeError):
        model.save(tmp_path / "broken.keras")
    assert os.listdir(tmp_path) == []


def test_an_asset_outside_its_folder_is_refused(tmp_path):
    model = hiapi.Sequential([hiapi.Input((5,)), Worded(words="x", units=2)])
    model.save(tmp_path / "w.keras")
    with zipfile.ZipFile(tmp_path / "w.keras") as source, \
            zipfile.ZipFile(tmp_path / "evil.keras", "w") as target:
        for name in source.namelist():
            target.writestr(name, source.read(name))
        target.writestr("assets/../../escaped.txt", b"no")
    with pytest.raises(ValueError, match=r"evil\.keras: asset 'assets/\.\./\.\./escaped\.txt' "
                                         r"points outside"):
        hiapi.models.load_model(tmp_path / "evil.keras")


@hiapi.saving.register_keras_serializable(package="test_hooks")
class BuiltWith(layers.Layer):
    """``build`` takes an extra argument, so the layer says how to call it (the guide's)."""
    def __init__(self, units=3, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def get_config(self):
        return {**super().get_config(), "units": self.units}

    def build(self, input_shape, init):
        self.w = self.add_weight(shape=(input_shape[-1], self.units), initializer=init)
        self.init, self._shape = init, input_shape
        self.built = True

    def get_build_config(self):
        return {"input_shape": self._shape, "init": self.init}

    def build_from_config(self, config):
        self.build(config["input_shape"], config["init"])

    def call(self, inputs):
        return hiapi.ops.matmul(inputs, self.w)


def test_build_config_hooks_rebuild_a_layer_whose_build_takes_more():
    layer = BuiltWith(name="bw")
    layer.build((5,), "ones")
    model = hiapi.Sequential([layer, layers.Dense(1)])
    model(X)
    entry = hiapi.saving.serialize_keras_object(model)["config"]["layers"][1]
    assert entry["build_config"] == {"input_shape": [5], "init": "ones"}
    assert layers.Dense(2).get_build_config() is None
    dense = layers.Dense(2)
    dense.build_from_config({"input_shape": [None, 4]})
    assert dense.built and dense.kernel.shape == (4, 2)


def test_build_config_hooks_through_a_keras_file(tmp_path):
    layer = BuiltWith(name="bw")
    layer.build((5,), "ones")
    model = hiapi.Sequential([layer, layers.Dense(1)])
    model(X)
    model.save(tmp_path / "b.keras")
    loaded = hiapi.models.load_model(tmp_path / "b.keras")
    assert loaded.layers[0].init == "ones" and loaded.built
    np.testing.assert_allclose(loaded.predict(X, verbose=0), model.predict(X, verbose=0))


@hiapi.saving.register_keras_serializable(package="test_hooks")
def tenth_squares(y_true, y_pred):
    return hiapi.ops.sum(hiapi.ops.square(y_pred - y_true) / 10.0, axis=1)


@hiapi.saving.register_keras_serializable(package="test_hooks")
class OwnCompile(hiapi.Model):
    """``compile`` with arguments of its own; saved and restored by the compile hooks."""
    calls = []

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = layers.Dense(3, activation="softmax")

    def call(self, inputs):
        return self.dense(inputs)

    def compile(self, optimizer, loss_fn):
        super().compile(optimizer=optimizer, loss=loss_fn)
        self.loss_fn = loss_fn

    def get_compile_config(self):
        return {"optimizer": "sgd", "loss_fn": self.loss_fn}

    def compile_from_config(self, config):
        OwnCompile.calls.append(("compile_from_config", self.dense.built))
        self.compile(optimizer=config["optimizer"],
                     loss_fn=hiapi.saving.deserialize_keras_object(config["loss_fn"]))


def test_compile_hooks_save_and_restore_a_custom_compile(tmp_path):
    model = OwnCompile()
    model.compile(optimizer="sgd", loss_fn=tenth_squares)
    model.fit(X, RNG.uniform(size=(6, 3)).astype("float32"), verbose=0)
    model.save(tmp_path / "c.keras")
    with zipfile.ZipFile(tmp_path / "c.keras") as archive:
        saved = json.loads(archive.read("config.json"))["compile_config"]
    assert saved["loss_fn"]["config"] == "test_hooks>tenth_squares"
    OwnCompile.calls.clear()
    loaded = hiapi.models.load_model(tmp_path / "c.keras")
    assert loaded.loss_fn is tenth_squares and loaded.compiled
    assert OwnCompile.calls == [("compile_from_config", True)]     # Keras's order: built first
    np.testing.assert_allclose(loaded.predict(X, verbose=0), model.predict(X, verbose=0))


def test_an_overridden_compile_without_compile_from_config_loads_uncompiled(tmp_path):
    class Plain(hiapi.Model):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.dense = layers.Dense(1)

        def call(self, inputs):
            return self.dense(inputs)

        def compile(self, learning_rate):
            super().compile(optimizer=hiapi.optimizers.SGD(learning_rate), loss="mse")
    hiapi.saving.get_custom_objects()["Plain"] = Plain
    try:
        model = Plain()
        model(X)
        model.compile(0.1)
        model.save(tmp_path / "p.keras")
        with pytest.warns(UserWarning, match=r"compile\(\) was not called.*custom"):
            loaded = hiapi.models.load_model(tmp_path / "p.keras")
        assert not loaded.compiled
    finally:
        del hiapi.saving.get_custom_objects()["Plain"]


def test_the_default_compile_config_round_trips(tmp_path):
    model = hiapi.Sequential([hiapi.Input((5,)), layers.Dense(3, activation="softmax")])
    model.compile(optimizer=hiapi.optimizers.Adam(0.01), loss="categorical_crossentropy",
                  metrics=["accuracy"])
    config = model.get_compile_config()
    assert config["optimizer"]["class_name"] == "Adam" and config["metrics"] == ["accuracy"]
    copy = hiapi.Sequential([hiapi.Input((5,)), layers.Dense(3, activation="softmax")])
    assert copy.get_compile_config() is None
    copy.compile_from_config(config)
    assert copy.compiled and copy.optimizer.learning_rate == pytest.approx(0.01)


@hiapi.saving.register_keras_serializable(package="test_hooks")
class Tempered(hiapi.Model):
    """A subclassed model with a Variable of its own and its own save hook."""
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = layers.Dense(3)
        self.temperature = hiapi.Variable(np.float32(2.0), name="temperature")

    def call(self, inputs):
        return self.dense(inputs) / self.temperature

    def save_own_variables(self, store):
        super().save_own_variables(store)
        store["note"] = np.arange(3)

    def load_own_variables(self, store):
        super().load_own_variables({key: value for key, value in store.items() if key != "note"})
        self.note = np.asarray(store["note"])


def test_a_subclassed_models_own_variables_go_through_its_hooks(tmp_path):
    model = Tempered()
    model(X)
    model.temperature.assign(np.float32(3.0))
    assert [v.name for v in model.saved_variables()] == ["temperature"]
    model.save(tmp_path / "t.keras")
    loaded = hiapi.models.load_model(tmp_path / "t.keras")
    assert float(loaded.temperature.numpy()) == 3.0 and loaded.note.tolist() == [0, 1, 2]
    np.testing.assert_allclose(loaded.predict(X, verbose=0), model.predict(X, verbose=0))
