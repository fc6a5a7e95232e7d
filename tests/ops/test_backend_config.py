"""``hiapi.backend`` and ``hiapi.config``: Keras's settings functions, their validation, and
that floatx reaches new layers (float64 models train, save and load)."""
import numpy as np
import pytest

import hiapi
from hiapi import layers
from hiapi.runtime import settings


@pytest.fixture(autouse=True)
def restore_settings():
    saved = dict(settings._settings)
    yield
    settings._settings.update(saved)


def test_defaults_match_keras():
    assert hiapi.backend.floatx() == hiapi.config.floatx() == "float32"
    assert hiapi.backend.epsilon() == hiapi.config.epsilon() == 1e-7
    assert hiapi.backend.image_data_format() == "channels_last"
    assert hiapi.config.is_traceback_filtering_enabled()
    assert hiapi.config.backend() == hiapi.backends.get_backend().name


def test_setters_validate_and_take_effect():
    hiapi.config.set_epsilon(1e-5)
    assert hiapi.backend.epsilon() == 1e-5
    hiapi.backend.set_image_data_format("channels_first")
    assert hiapi.config.image_data_format() == "channels_first"
    hiapi.config.disable_traceback_filtering()
    assert not hiapi.config.is_traceback_filtering_enabled()
    hiapi.config.enable_traceback_filtering()
    assert hiapi.config.is_traceback_filtering_enabled()
    with pytest.raises(ValueError, match="set_epsilon: .*positive, got -1"):
        hiapi.config.set_epsilon(-1)
    with pytest.raises(ValueError, match="channels_last.*channels_first.*got 'nhwc'"):
        hiapi.config.set_image_data_format("nhwc")
    with pytest.raises(ValueError, match="float32 and float64 models only, got 'float16'"):
        hiapi.config.set_floatx("float16")
    with pytest.raises(ValueError, match="unknown float type 'float8'"):
        hiapi.config.set_floatx("float8")


def test_float64_floatx_trains_saves_and_loads(tmp_path):
    hiapi.config.set_floatx("float64")
    hiapi.utils.set_random_seed(0)
    x = np.random.default_rng(0).normal(size=(32, 6, 6, 1))
    y = (x.mean((1, 2, 3)) > 0).astype(int)
    model = hiapi.Sequential([hiapi.Input((6, 6, 1)), layers.Conv2D(2, 3, activation="relu"),
                              layers.Flatten(), layers.Dense(2, activation="softmax")])
    assert all(w.dtype == np.float64 for w in model.get_weights())
    model.compile("adam", "sparse_categorical_crossentropy")
    history = model.fit(x, y, epochs=3, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    model.save(tmp_path / "m.hiapi")
    loaded = hiapi.models.load_model(tmp_path / "m.hiapi")
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
    assert hiapi.ops.convert_to_tensor([1.5]).dtype == np.float64


def test_backend_helpers():
    x = hiapi.Input((3, 4))
    assert hiapi.backend.int_shape(x) == (None, 3, 4)
    assert hiapi.backend.int_shape(np.ones((2, 5))) == (2, 5)
    assert hiapi.backend.is_keras_tensor(x) and not hiapi.backend.is_keras_tensor(np.ones(2))
    assert hiapi.backend.is_float_dtype("float64") and hiapi.backend.is_int_dtype("int32")
    assert hiapi.backend.result_type("int32", "float32") == "float64"
    with pytest.raises(TypeError, match="int_shape: expected a tensor"):
        hiapi.backend.int_shape(3)


def test_clear_session_resets_default_names():
    hiapi.backend.clear_session()
    assert layers.Dense(2).name == "dense"
    assert layers.Dense(2).name == "dense_1"
    hiapi.backend.clear_session()
    assert layers.Dense(2).name == "dense"


def test_set_random_seed_everywhere_repeats_initial_weights():
    for seed_fn in (hiapi.utils.set_random_seed, hiapi.config.set_random_seed):
        seed_fn(3)
        first = layers.Dense(4)(np.ones((1, 2)))
        seed_fn(3)
        np.testing.assert_array_equal(layers.Dense(4)(np.ones((1, 2))), first)


def test_unsafe_deserialization_switch():
    assert not settings.unsafe_deserialization_enabled()
    hiapi.config.enable_unsafe_deserialization()
    assert settings.unsafe_deserialization_enabled()
