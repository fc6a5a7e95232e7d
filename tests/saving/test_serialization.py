"""Keras's serialization API: model configs (Sequential, functional, nested) in Keras 3's
format round-trip to models that predict the same; clone_model, to_json / model_from_json,
the registry of custom objects, serialize_keras_object / deserialize_keras_object, and custom
layers in .keras files."""
import json
import pathlib
import zipfile

import numpy as np
import pytest

import hiapi
from hiapi import layers
from hiapi.serialization import object_registration

DATA = pathlib.Path(__file__).parent / "data"
X = np.random.default_rng(0).normal(size=(5, 4)).astype("float32")


def sequential():
    return hiapi.Sequential([hiapi.Input((4,)), layers.Dense(6, activation="relu"),
                             layers.Dropout(0.2), layers.Dense(3, activation="softmax")],
                            name="seq")


def functional():
    """Two inputs, a shared layer, a raw op between layers and a nested Sequential."""
    a, b = hiapi.Input((4,), name="a"), hiapi.Input((4,), name="b")
    shared = layers.Dense(5, name="shared")
    block = hiapi.Sequential([hiapi.Input((5,)), layers.Dense(5, activation="tanh")],
                             name="block")
    merged = layers.Concatenate()([block(shared(a)), shared(b) * 2.0])
    return hiapi.Model([a, b], [layers.Dense(2)(merged), layers.Dense(1)(merged)], name="fn")


def predictions(model, x):
    out = model.predict(x, verbose=0)
    return out if isinstance(out, list) else [out]


def assert_same_predictions(model, copy, x):
    for want, got in zip(predictions(model, x), predictions(copy, x)):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("build, x", [(sequential, X), (functional, [X, X[::-1]])])
def test_config_round_trip_keeps_the_whole_architecture(build, x):
    model = build()
    config = json.loads(json.dumps(model.get_config()))       # JSON-able, as in Keras
    copy = type(model).from_config(config)
    assert [type(l).__name__ for l in copy.layers] == [type(l).__name__ for l in model.layers]
    assert [w.shape for w in copy.weights] == [w.shape for w in model.weights]
    copy.set_weights(model.get_weights())
    assert_same_predictions(model, copy, x)
    assert copy.get_config() == config


def test_configs_use_keras_3_format():
    config = sequential().get_config()
    assert set(config) == {"name", "trainable", "dtype", "layers", "build_input_shape"}
    assert config["layers"][0]["class_name"] == "InputLayer"
    dense = config["layers"][1]
    assert {key: dense[key] for key in ("module", "class_name", "registered_name")} == \
        {"module": "keras.layers", "class_name": "Dense", "registered_name": None}
    assert dense["config"]["units"] == 6
    config = functional().get_config()
    assert set(config) == {"name", "trainable", "layers", "input_layers", "output_layers"}
    assert config["input_layers"] == [["a", 0, 0], ["b", 0, 0]]
    shared = next(entry for entry in config["layers"] if entry["name"] == "shared")
    assert len(shared["inbound_nodes"]) == 2
    block = next(entry for entry in config["layers"] if entry["name"] == "block")
    assert block["class_name"] == "Sequential" and len(block["config"]["layers"]) == 2


def test_model_from_config_was_silently_empty():
    """The regression of issue #27: from_config built a model with no layers."""
    model = functional()
    copy = hiapi.Model.from_config(model.get_config())
    assert len(copy.layers) == len(model.layers) and copy.count_params() == \
        model.count_params()


def test_sequential_from_config_reads_keras_files_config_with_dtype():
    with zipfile.ZipFile(DATA / "keras" / "mlp.keras") as archive:
        config = json.loads(archive.read("config.json"))["config"]
    assert "dtype" in config
    model = hiapi.Sequential.from_config(config)
    model.load_weights(DATA / "keras" / "mlp.keras")
    np.testing.assert_allclose(
        model.predict(X.repeat(2, axis=1), verbose=0),
        hiapi.models.load_model(DATA / "keras" / "mlp.keras").predict(X.repeat(2, axis=1),
                                                                      verbose=0))
    assert hiapi.Sequential.from_config({"name": "d", "layers": [], "dtype": "float64"}) \
        .dtype == "float64"


def test_clone_model_has_fresh_weights_and_the_same_architecture():
    for model, x in ((sequential(), X), (functional(), [X, X])):
        copy = hiapi.models.clone_model(model)
        assert all(a is not b for a, b in zip(copy.layers, model.layers))
        assert [w.shape for w in copy.weights] == [w.shape for w in model.weights]
        assert any(not np.array_equal(a, b) for a, b in zip(copy.get_weights(),
                                                            model.get_weights()))
        copy.set_weights(model.get_weights())
        assert_same_predictions(model, copy, x)


def test_clone_function_sees_each_layer_once_and_shared_layers_stay_shared():
    model = functional()
    seen = []

    def freeze(layer):
        seen.append(layer.name)
        return layer.__class__.from_config({**layer.get_config(), "trainable": False})
    copy = hiapi.models.clone_model(model, clone_function=freeze)
    assert len(seen) == len(set(seen))
    assert "shared" in seen and "block" in seen
    assert copy.trainable_weights == []
    assert len(copy.get_layer("shared").weights) == 2          # one layer, called twice


def test_clone_model_input_tensors_recursive_and_call_function():
    model = functional()
    inputs = [hiapi.Input((4,), name="p"), hiapi.Input((4,), name="q")]
    calls = []

    def call(layer, *args, **kwargs):
        calls.append(layer.name)
        return layer(*args, **kwargs)
    copy = hiapi.models.clone_model(model, input_tensors=inputs, call_function=call,
                                    recursive=True)
    assert copy.inputs == inputs
    assert calls.count("shared") == 2
    block = copy.get_layer("block")
    assert block is not model.get_layer("block") and isinstance(block, hiapi.Sequential)
    with pytest.raises(ValueError, match="input_tensors must be 2 symbolic"):
        hiapi.models.clone_model(model, input_tensors=[inputs[0]])


def test_to_json_and_model_from_json():
    model = functional()
    text = model.to_json()
    assert json.loads(text)["class_name"] == "Functional"
    copy = hiapi.models.model_from_json(text)
    copy.set_weights(model.get_weights())
    assert_same_predictions(model, copy, [X, X])


@hiapi.saving.register_keras_serializable(package="test_serialization")
class Offset(layers.Layer):
    def __init__(self, amount=1.0, **kwargs):
        super().__init__(**kwargs)
        self.amount = amount

    def build(self, input_shape):
        self.bias = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="bias")

    def call(self, inputs):
        return inputs + self.bias * self.amount

    def get_config(self):
        return {**super().get_config(), "amount": self.amount}


def offset_model():
    inputs = hiapi.Input((4,))
    return hiapi.Model(inputs, layers.Dense(2)(Offset(3.0, name="off")(inputs)))


def test_registry_names_and_lookup():
    assert hiapi.saving.get_registered_name(Offset) == "test_serialization>Offset"
    assert hiapi.saving.get_custom_objects()["test_serialization>Offset"] is Offset
    assert hiapi.saving.get_registered_object("test_serialization>Offset") is Offset
    assert hiapi.saving.get_registered_name(layers.Dense) == "Dense"

    class Local(layers.Layer):
        pass
    with hiapi.saving.custom_object_scope({"Local": Local}):
        assert hiapi.saving.get_registered_object("Local") is Local
        with hiapi.saving.CustomObjectScope({"Other": Offset}):
            assert hiapi.saving.get_registered_object("Local") is Local
    assert hiapi.saving.get_registered_object("Local") is None
    with pytest.raises(ValueError, match="cannot register class 'NoConfig'.*get_config"):
        hiapi.saving.register_keras_serializable()(type("NoConfig", (), {}))


def test_registering_a_name_again_replaces_it_as_in_keras():
    first = hiapi.saving.register_keras_serializable("test_serialization", "Again")(
        type("A", (layers.Layer,), {}))
    second = hiapi.saving.register_keras_serializable("test_serialization", "Again")(
        type("B", (layers.Layer,), {}))
    assert hiapi.saving.get_registered_object("test_serialization>Again") is second
    assert first is not second
    del object_registration.GLOBAL_CUSTOM_OBJECTS["test_serialization>Again"]


def test_custom_layer_config_round_trip_and_get_custom_objects():
    model = offset_model()
    entry = hiapi.saving.serialize_keras_object(model.get_layer("off"))
    assert entry["registered_name"] == "test_serialization>Offset"
    assert entry["config"]["amount"] == 3.0
    copy = hiapi.Model.from_config(model.get_config())
    copy.set_weights(model.get_weights())
    assert_same_predictions(model, copy, X)


def test_an_unregistered_custom_layer_loads_with_custom_objects_or_a_scope(tmp_path):
    class Twice(layers.Layer):
        def call(self, inputs):
            return inputs * 2.0
    inputs = hiapi.Input((4,))
    model = hiapi.Model(inputs, Twice(name="twice")(layers.Dense(3)(inputs)))
    model.save(tmp_path / "t.keras")
    with pytest.raises(ValueError, match=r"Unknown class 'Twice'.*custom_objects="):
        hiapi.models.load_model(tmp_path / "t.keras")
    for loaded in (hiapi.models.load_model(tmp_path / "t.keras",
                                           custom_objects={"Twice": Twice}),):
        assert_same_predictions(model, loaded, X)
    with hiapi.saving.custom_object_scope({"Twice": Twice}):
        assert_same_predictions(model, hiapi.models.load_model(tmp_path / "t.keras"), X)
    hiapi.saving.get_custom_objects()["Twice"] = Twice
    try:
        assert_same_predictions(model, hiapi.models.load_model(tmp_path / "t.keras"), X)
    finally:
        del hiapi.saving.get_custom_objects()["Twice"]


def test_registered_custom_layer_saves_to_keras_and_loads_back(tmp_path):
    model = offset_model()
    model.compile(optimizer="adam", loss="mse")
    model.train_on_batch(X, np.ones((5, 2), "float32"))
    model.save(tmp_path / "o.keras")
    with zipfile.ZipFile(tmp_path / "o.keras") as archive:
        config = json.loads(archive.read("config.json"))
    entry = next(e for e in config["config"]["layers"] if e["name"] == "off")
    assert entry["class_name"] == "Offset" and entry["module"] == __name__
    loaded = hiapi.models.load_model(tmp_path / "o.keras")
    assert isinstance(loaded.get_layer("off"), Offset)
    assert loaded.get_layer("off").amount == 3.0
    assert_same_predictions(model, loaded, X)


def test_serialize_and_deserialize_keras_objects():
    dense = layers.Dense(3, kernel_initializer=hiapi.initializers.RandomNormal(stddev=0.1),
                         name="d")
    entry = hiapi.layers.serialize(dense)
    assert entry["config"]["kernel_initializer"]["class_name"] == "RandomNormal"
    again = hiapi.layers.deserialize(json.loads(json.dumps(entry)))
    assert isinstance(again, layers.Dense) and again.units == 3 and again is not dense
    built = hiapi.saving.deserialize_keras_object(
        {**entry, "build_config": {"input_shape": [None, 5]}})
    assert built.built and built.kernel.shape == (5, 3)
    initializer = hiapi.saving.serialize_keras_object(hiapi.initializers.Constant(0.5))
    assert initializer["module"] == "keras.initializers"
    made = hiapi.saving.deserialize_keras_object(initializer)
    np.testing.assert_array_equal(made((2,)), [0.5, 0.5])
    assert hiapi.saving.deserialize_keras_object("relu") == "relu"
    array = hiapi.saving.serialize_keras_object(np.arange(3.0))
    np.testing.assert_array_equal(hiapi.saving.deserialize_keras_object(array), [0, 1, 2])


def test_deserialize_function_and_loss_objects():
    def halve(x):
        return x / 2
    entry = hiapi.saving.serialize_keras_object(halve)
    assert entry["class_name"] == "function" and entry["config"] == "halve"
    assert hiapi.saving.deserialize_keras_object(entry, custom_objects={"halve": halve}) \
        is halve
    loss = hiapi.saving.serialize_keras_object(hiapi.losses.Huber(delta=0.5))
    assert loss["class_name"] == "Huber"
    assert hiapi.saving.deserialize_keras_object(loss).get_config()["delta"] == 0.5


def test_a_users_class_is_never_taken_for_hiapis_namesake():
    class Dense(layers.Layer):          # unregistered, in this test module
        pass
    entry = hiapi.layers.serialize(Dense(name="mine"))
    assert entry["module"] == __name__
    with pytest.raises(ValueError, match=r"Unknown class 'Dense'.*custom_objects"):
        hiapi.layers.deserialize(entry)
    assert type(hiapi.layers.deserialize(entry, custom_objects={"Dense": Dense})) is Dense


def test_an_unbuilt_sequential_round_trips_and_builds_from_the_data():
    model = hiapi.Sequential([layers.Dense(3), layers.Dense(2)], name="lazy")
    config = model.get_config()
    assert "build_input_shape" not in config and len(config["layers"]) == 2
    copy = hiapi.Sequential.from_config(config)
    assert copy.predict(X, verbose=0).shape == (5, 2)


def test_keras_utils_exports_the_serialization_api():
    """Keras 3 exports the registry and (de)serializers from keras.utils as well as
    keras.saving; the customizing-saving guide uses keras.utils.register_keras_serializable."""
    @hiapi.utils.register_keras_serializable(package="test_utils")
    def triple(x):
        return 3.0 * x
    try:
        assert hiapi.saving.get_registered_object("test_utils>triple") is triple
        assert hiapi.utils.get_registered_name(triple) == "test_utils>triple"
        entry = hiapi.utils.serialize_keras_object(triple)
        assert hiapi.utils.deserialize_keras_object(entry) is triple
        with hiapi.utils.custom_object_scope({"Offset": Offset}):
            assert hiapi.utils.get_registered_object("Offset") is Offset
        assert hiapi.utils.get_custom_objects() is hiapi.saving.get_custom_objects()
        assert hiapi.utils.CustomObjectScope is hiapi.saving.CustomObjectScope
    finally:
        del hiapi.saving.get_custom_objects()["test_utils>triple"]


@hiapi.saving.register_keras_serializable(package="test_serialization", name="cube")
def cube(x):
    return x * x * x


def test_a_custom_activation_function_saves_by_its_registered_name(tmp_path):
    """Keras writes Dense(activation=fn) as a function object naming ``package>name``; hiapi
    left the function itself in config.json, which json could not write."""
    def halve(x):
        return x / 2.0
    inputs = hiapi.Input((4,))
    hidden = layers.Dense(3, activation=cube, name="cubed")(inputs)
    model = hiapi.Model(inputs, layers.Dense(2, activation=halve, name="halved")(hidden))
    model.save(tmp_path / "f.keras")
    with zipfile.ZipFile(tmp_path / "f.keras") as archive:
        entries = {e["name"]: e for e in json.loads(archive.read("config.json"))["config"]["layers"]}
    assert entries["cubed"]["config"]["activation"] == {
        "module": __name__, "class_name": "function", "config": "test_serialization>cube",
        "registered_name": "function"}
    with pytest.raises(ValueError, match=r"Unknown function 'halve'.*custom_objects"):
        hiapi.models.load_model(tmp_path / "f.keras")
    loaded = hiapi.models.load_model(tmp_path / "f.keras", custom_objects={"halve": halve})
    assert loaded.get_layer("cubed").activation is cube
    assert_same_predictions(model, loaded, X)
    with pytest.raises(ValueError, match=r"activation=<function.*lambda.*register"):
        hiapi.Sequential([hiapi.Input((4,)), layers.Dense(2, activation=lambda x: x)]).save(
            tmp_path / "l.keras")


@hiapi.saving.register_keras_serializable(package="test_serialization")
class Around(layers.Layer):
    """Holds a sublayer and a regularizer given to its constructor (the guide's MyDense and
    CustomModel)."""
    def __init__(self, inner, penalty=None, **kwargs):
        super().__init__(**kwargs)
        self.inner, self.penalty = inner, penalty

    def call(self, inputs):
        return self.inner(inputs) + 1.0

    def get_config(self):
        return {**super().get_config(), "inner": self.inner, "penalty": self.penalty}

    @classmethod
    def from_config(cls, config):
        config["inner"] = hiapi.layers.deserialize(config["inner"])
        return cls(**config)


def test_layers_and_objects_in_a_custom_config_are_serialized_as_keras_does(tmp_path):
    layer = Around(layers.Dense(3, name="inside"), hiapi.regularizers.L1L2(l1=1e-5, l2=1e-4),
                   name="around")
    entry = hiapi.layers.serialize(layer)
    json.dumps(entry)
    assert entry["config"]["inner"]["class_name"] == "Dense"
    assert entry["config"]["penalty"] == {"module": "keras.regularizers", "class_name": "L1L2",
                                          "config": {"l1": 1e-5, "l2": 1e-4},
                                          "registered_name": None}
    again = hiapi.layers.deserialize(entry)
    assert isinstance(again.inner, layers.Dense) and again.inner is not layer.inner
    assert again.penalty["class_name"] == "L1L2"      # Keras passes it on as it was saved
    inputs = hiapi.Input((4,))
    model = hiapi.Model(inputs, layer(inputs))
    model.save(tmp_path / "a.keras")
    assert_same_predictions(model, hiapi.models.load_model(tmp_path / "a.keras"), X)


def test_optimizers_and_schedules_serialize_as_keras_objects():
    """keras.saving.serialize_keras_object(optimizer) is a keras.optimizers object that
    deserialize_keras_object turns back into the optimizer; hiapi could not find the class."""
    schedule = hiapi.optimizers.schedules.ExponentialDecay(0.1, 10, 0.9)
    entry = hiapi.saving.serialize_keras_object(hiapi.optimizers.Adam(schedule, beta_1=0.8))
    assert entry["module"] == "keras.optimizers" and entry["class_name"] == "Adam"
    assert entry["config"]["learning_rate"]["module"] == "keras.optimizers.schedules"
    again = hiapi.saving.deserialize_keras_object(json.loads(json.dumps(entry)))
    assert isinstance(again, hiapi.optimizers.Adam) and again.beta_1 == 0.8
    assert isinstance(again.learning_rate_schedule, hiapi.optimizers.schedules.ExponentialDecay)
    assert again.learning_rate_schedule(10) == pytest.approx(0.09)
    alone = hiapi.saving.deserialize_keras_object(hiapi.saving.serialize_keras_object(schedule))
    assert alone(20) == pytest.approx(0.081)


@hiapi.saving.register_keras_serializable(package="test_serialization")
def cubed_error(y_true, y_pred):
    return hiapi.ops.mean((y_pred - y_true) ** 3, axis=-1)


def test_a_keras_function_object_in_compile_config_names_the_function():
    model = hiapi.Sequential([hiapi.Input((4,)), layers.Dense(1)])
    model.compile_from_config({
        "optimizer": {"module": "keras.optimizers", "class_name": "SGD",
                      "config": {"learning_rate": 0.1}, "registered_name": None},
        "loss": {"module": "builtins", "class_name": "function",
                 "config": "test_serialization>cubed_error",
                 "registered_name": "function"}})
    loss = model.evaluate(np.ones((2, 4), "float32"), np.zeros((2, 1), "float32"), verbose=0)
    want = model.predict(np.ones((2, 4), "float32"), verbose=0) ** 3
    assert loss == pytest.approx(float(want.mean()), rel=1e-5)


def test_a_registered_loss_function_survives_a_keras_file(tmp_path):
    model = hiapi.Sequential([hiapi.Input((4,)), layers.Dense(1)])
    model.compile(optimizer="sgd", loss=cubed_error, metrics=[cubed_error])
    model.save(tmp_path / "cube.keras")
    loaded = hiapi.models.load_model(tmp_path / "cube.keras")
    x, y = np.ones((2, 4), "float32"), np.zeros((2, 1), "float32")
    assert loaded.evaluate(x, y, verbose=0) == pytest.approx(model.evaluate(x, y, verbose=0))


@hiapi.saving.register_keras_serializable(package="test_serialization")
class Named(layers.Layer):
    """Keeps the strings it was given (the serialization guide's MyDense with "l1", "ones")."""
    def __init__(self, kernel_regularizer=None, kernel_initializer=None, **kwargs):
        super().__init__(**kwargs)
        self.kernel_regularizer, self.kernel_initializer = kernel_regularizer, kernel_initializer

    def get_config(self):
        return {**super().get_config(), "kernel_regularizer": self.kernel_regularizer,
                "kernel_initializer": self.kernel_initializer}


def test_strings_in_a_custom_config_stay_strings_as_keras_keeps_them():
    entry = hiapi.layers.serialize(Named(kernel_regularizer="l1", kernel_initializer="ones"))
    assert entry["config"]["kernel_regularizer"] == "l1"
    assert entry["config"]["kernel_initializer"] == "ones"
    assert entry["config"]["dtype"]["class_name"] == "DTypePolicy"
    again = hiapi.layers.deserialize(entry)
    assert (again.kernel_regularizer, again.kernel_initializer) == ("l1", "ones")
