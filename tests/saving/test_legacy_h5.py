"""Keras 2's HDF5 weights (``model.save("m.h5")``, ``save_weights("w.h5")``), written by real
Keras (tests/saving/data/make_legacy_h5.py), loaded by hiapi's ``load_weights`` as Keras 3
loads them: by order, or by name."""
import pathlib

import numpy as np
import pytest

import hiapi
from hiapi import layers

pytest.importorskip("h5py", reason="h5py (the keras-format extra) is not installed")

DATA = pathlib.Path(__file__).parent / "data"
EXPECTED = np.load(DATA / "legacy_predictions.npz")


def model(extra=False):
    inputs = hiapi.Input((6, 6, 2))
    x = layers.Conv2D(4, 3, activation="relu", name="conv")(inputs)
    x = layers.BatchNormalization(name="norm")(x)
    x = layers.Flatten(name="flatten")(x)
    x = layers.Dense(5, activation="relu", name="hidden")(x)
    x = layers.Dense(3, name="logits")(x)
    if extra:
        x = layers.Dense(3, name="extra")(x)
    return hiapi.Model(inputs, x)


@pytest.mark.parametrize("name", ["legacy_model.h5", "legacy_weights.h5"])
def test_a_keras_2_file_loads_by_order_and_predicts_as_keras(name):
    loaded = model()
    loaded.load_weights(DATA / "keras" / name)
    np.testing.assert_allclose(loaded.predict(EXPECTED["x"], verbose=0), EXPECTED["y"],
                               rtol=1e-5, atol=1e-6)


def test_by_name_loads_the_layers_that_match_and_leaves_the_others():
    loaded = model(extra=True)
    with pytest.raises(ValueError, match=r"holds weights for 4 layers .* model '.*' has 5 "
                                         r"layers with weights .*by_name=True"):
        loaded.load_weights(DATA / "keras" / "legacy_model.h5")
    extra = loaded.get_layer("extra").kernel.numpy()
    loaded.load_weights(DATA / "keras" / "legacy_model.h5", by_name=True)
    np.testing.assert_array_equal(loaded.get_layer("extra").kernel.numpy(), extra)
    reference = model()
    reference.load_weights(DATA / "keras" / "legacy_model.h5")
    for a, b in zip(reference.get_weights(), loaded.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_a_layer_of_another_shape_is_named_or_skipped():
    inputs = hiapi.Input((6, 6, 2))
    x = layers.Conv2D(4, 3, activation="relu", name="conv")(inputs)
    x = layers.BatchNormalization(name="norm")(x)
    x = layers.Flatten(name="flatten")(x)
    x = layers.Dense(7, activation="relu", name="hidden")(x)       # 5 in the file
    other = hiapi.Model(inputs, layers.Dense(3, name="logits")(x))
    before = other.get_weights()
    with pytest.raises(ValueError, match=r"'hidden' in the model.*weight 'hidden/kernel' has "
                                         r"shape \(64, 7\), the file holds shape \(64, 5\)"):
        other.load_weights(DATA / "keras" / "legacy_weights.h5")
    for a, b in zip(before, other.get_weights()):       # matched first: nothing assigned
        np.testing.assert_array_equal(a, b)
    with pytest.warns(UserWarning, match="skipped"):
        other.load_weights(DATA / "keras" / "legacy_weights.h5", skip_mismatch=True)
    reference = model()
    reference.load_weights(DATA / "keras" / "legacy_weights.h5")
    np.testing.assert_array_equal(other.get_layer("conv").kernel.numpy(),
                                  reference.get_layer("conv").kernel.numpy())
    # 'logits': its kernel does not fit (7 inputs), its bias would; the layer is left whole
    np.testing.assert_array_equal(other.get_layer("logits").bias.numpy(), before[-1])


def test_load_model_on_a_keras_2_file_says_what_to_do():
    with pytest.raises(ValueError, match=r"Keras 2's whole-model '.h5' format.*build the "
                                         r"model in code and call model.load_weights"):
        hiapi.models.load_model(DATA / "keras" / "legacy_model.h5")


def test_by_name_is_refused_for_files_of_other_layouts(tmp_path):
    saved = model()
    saved.save_weights(tmp_path / "w.weights.h5")
    with pytest.raises(ValueError, match="read for Keras 2's '.h5' files"):
        model().load_weights(tmp_path / "w.weights.h5", by_name=True)
