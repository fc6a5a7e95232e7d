"""Keras 3 ``.keras`` and ``.weights.h5`` files, both ways.

hiapi reads the files real Keras wrote (tests/saving/data/keras/, made by
data/make_keras_models.py) and predicts what Keras predicted; real Keras reads the files hiapi
writes and predicts what hiapi predicts (run in a separate interpreter named by
``HIAPI_KERAS_PYTHON``, which ``.ci/run`` sets up, so the main environment stays free of Keras
and JAX).
"""
import json
import os
import pathlib
import subprocess
import sys
import zipfile

import numpy as np
import pytest

import hiapi
from hiapi import layers
from keras_test_models import MODELS, ZOO, as_list

pytest.importorskip("h5py", reason="h5py (the keras-format extra) is not installed")
import h5py  # noqa: E402

DATA = pathlib.Path(__file__).parent / "data"
KERAS_PREDICTIONS = np.load(DATA / "keras_predictions.npz")
KERAS_OPTIMIZERS = {"mlp": "Adam", "mnist_convnet": "SGD", "batch_norm": "RMSprop",
                    "recurrent": "SGD", "multi_output": "Adam", "wrappers": "Adam",
                    "cells": "RMSprop", "mixed_precision": "LossScaleOptimizer"}


def keras_case(name):
    keys = sorted(KERAS_PREDICTIONS)
    return ([KERAS_PREDICTIONS[k] for k in keys if k.startswith(f"{name}/x")],
            [KERAS_PREDICTIONS[k] for k in keys if k.startswith(f"{name}/y")])


@pytest.mark.parametrize("name", list(KERAS_OPTIMIZERS))     # MODELS, wrappers, cells
def test_hiapi_loads_what_keras_wrote_and_predicts_the_same(name):
    model = hiapi.models.load_model(DATA / "keras" / f"{name}.keras")
    x, expected = keras_case(name)
    got = as_list(model.predict(x if len(x) > 1 else x[0], verbose=0))
    assert len(got) == len(expected)
    for y, want in zip(got, expected):
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    assert type(model.optimizer).__name__ == KERAS_OPTIMIZERS[name]
    assert int(model.optimizer.iterations.numpy()) == 1      # trained one step in Keras
    assert all(np.any(slot.numpy() != 0) for slot in model.optimizer.variables[1:])


def test_keras_compile_config_is_restored():
    model = hiapi.models.load_model(DATA / "keras" / "multi_output.keras")
    assert model._loss_ids == ["mse", "sparse_categorical_crossentropy", "mae"]
    assert model._loss_weight_ids == [1.0, 0.5, 0.1]
    batch_norm = hiapi.models.load_model(DATA / "keras" / "batch_norm.keras")
    assert batch_norm.optimizer.learning_rate == pytest.approx(0.01)
    assert batch_norm._metric_ids == ["mae"]
    uncompiled = hiapi.models.load_model(DATA / "keras" / "mlp.keras", compile=False)
    assert not getattr(uncompiled, "compiled", False)


def test_keras_weights_load_into_a_hiapi_model(tmp_path):
    model, x, _ = MODELS["mlp"]()
    model.load_weights(DATA / "keras" / "mlp.keras")       # the archive's weights
    np.testing.assert_allclose(model.predict(x, verbose=0),
                               hiapi.models.load_model(DATA / "keras" / "mlp.keras")
                               .predict(x, verbose=0), rtol=1e-6)


def save_all(folder):
    """Train each compiled model one step (the others hold random weights), save it as
    .keras and .weights.h5; inputs and hiapi's predictions go to inputs.npz."""
    arrays = {}
    for name, build in {**MODELS, **ZOO}.items():
        model, x, y = build()
        if y is not None:
            model.train_on_batch(x, y)
        model.save(folder / f"{name}.keras")
        model.save_weights(folder / f"{name}.weights.h5")
        for i, xi in enumerate(as_list(x)):
            arrays[f"{name}/x{i}"] = xi
        for i, yi in enumerate(as_list(model.predict(x, verbose=0))):
            arrays[f"{name}/hiapi_y{i}"] = yi
    np.savez(folder / "inputs.npz", **arrays)
    return arrays


def test_hiapi_files_round_trip_in_hiapi(tmp_path):
    arrays = save_all(tmp_path)
    for name, build in {**MODELS, **ZOO}.items():
        x = [arrays[k] for k in sorted(arrays) if k.startswith(f"{name}/x")]
        loaded = hiapi.models.load_model(tmp_path / f"{name}.keras")
        got = as_list(loaded.predict(x if len(x) > 1 else x[0], verbose=0))
        for i, y in enumerate(got):
            np.testing.assert_array_equal(y, arrays[f"{name}/hiapi_y{i}"])
        if getattr(loaded, "compiled", False):
            assert int(loaded.optimizer.iterations.numpy()) == 1
        fresh, _, _ = build()
        fresh.load_weights(tmp_path / f"{name}.weights.h5")
        for a, b in zip(fresh.get_weights(), loaded.get_weights()):
            np.testing.assert_array_equal(a, b)


def test_written_archive_has_keras_layout(tmp_path):
    model, x, y = MODELS["multi_output"]()
    model.train_on_batch(x, y)
    model.save(tmp_path / "m.keras")
    with zipfile.ZipFile(tmp_path / "m.keras") as archive:
        assert set(archive.namelist()) == {"config.json", "metadata.json", "model.weights.h5"}
        config = json.loads(archive.read("config.json"))
        metadata = json.loads(archive.read("metadata.json"))
        archive.extract("model.weights.h5", tmp_path)
    assert metadata["keras_version"].startswith("3.")
    assert config["class_name"] == "Functional" and config["registered_name"] == "Functional"
    dense = next(e for e in config["config"]["layers"] if e["name"] == "score")
    assert dense["config"]["kernel_initializer"] == {
        "module": "keras.initializers", "class_name": "GlorotUniform",
        "config": {"seed": None}, "registered_name": None}
    merge = next(l for l in model.layers if isinstance(l, layers.Concatenate))
    assert dense["inbound_nodes"][0]["args"][0]["config"]["keras_history"] == \
        [merge.name, 0, 0]
    assert config["config"]["input_layers"] == [["features", 0, 0], ["extra", 0, 0]]
    assert config["compile_config"]["optimizer"]["class_name"] == "Adam"
    with h5py.File(tmp_path / "model.weights.h5") as file:
        # Keras names groups by class and position in its layer order, not by layer name:
        # trunk is dense, then (by depth) branch/label before score.
        assert file["layers/dense/vars"].attrs["name"] == "trunk"
        assert {file[f"layers/{g}/vars"].attrs["name"] for g in ("dense_1", "dense_2",
                                                                "dense_3")} == \
            {"score", "label", "branch"}
        np.testing.assert_array_equal(file["layers/dense/vars/0"],
                                      model.get_layer("trunk").kernel.numpy())
        assert len(file["optimizer/vars"]) == 2 + 2 * len(model.trainable_weights)


def test_recurrent_weights_live_in_the_cell(tmp_path):
    model, _, _ = MODELS["recurrent"]()
    model.save_weights(tmp_path / "r.weights.h5")
    with h5py.File(tmp_path / "r.weights.h5") as file:
        assert [file[f"layers/lstm/cell/vars/{i}"].shape for i in range(3)] == \
            [(3, 16), (4, 16), (16,)]
        assert len(file["layers/lstm/vars"]) == 0


def test_what_keras_cannot_express_is_refused_with_its_name(tmp_path):
    custom = hiapi.Sequential([hiapi.Input((4, 2)),
                               layers.SpatialDropout1D(0.5, trainable=False, name="drop")])
    with pytest.raises(ValueError, match=r"layer 'drop' \(SpatialDropout1D\).*has no "
                                         r"argument 'trainable' \(it is False here\).*'\.hiapi'"):
        custom.save(tmp_path / "c.keras")
    inputs = hiapi.Input((4, 3))
    output, _ = layers.MultiHeadAttention(2, 3, name="mha")(inputs, inputs,
                                                            return_attention_scores=True)
    with pytest.raises(ValueError, match=r"layer 'mha' \(MultiHeadAttention\).*"
                                         r"return_attention_scores"):
        hiapi.Model(inputs, output).save(tmp_path / "a.keras")
    inputs = hiapi.Input((3,))
    raw_op = hiapi.Model(inputs, layers.Dense(2)(inputs) + 1.0)
    with pytest.raises(ValueError, match=r"applies the operation .* directly.*'\.hiapi'"):
        raw_op.save(tmp_path / "r.keras")
    lars = hiapi.Sequential([hiapi.Input((3,)), layers.Dense(2)])
    lars.compile(optimizer=hiapi.optimizers.LARS(), loss="mse")
    with pytest.raises(ValueError, match=r"optimizer LARS.*include_optimizer=False"):
        lars.save(tmp_path / "l.keras")
    lars.save(tmp_path / "l.keras", include_optimizer=False)
    assert not (tmp_path / "c.keras").exists() and not (tmp_path / "r.keras").exists()
    custom.save(tmp_path / "c.hiapi")       # the native format keeps it


def test_compressor_state_is_refused_with_its_name(tmp_path):
    model = hiapi.Sequential([hiapi.Input((3,)), layers.Dense(2)])
    with hiapi.distribute.Strategy(compression="topk").scope():
        model.compile(optimizer="sgd", loss="mse")
    with pytest.raises(ValueError, match=r"TopK gradient compressor, whose state \(residual\)"
                                         r".*'\.hiapi'"):
        model.save(tmp_path / "m.keras")


def test_missing_h5py_names_the_extra(tmp_path, monkeypatch):
    model = hiapi.Sequential([hiapi.Input((3,)), layers.Dense(2)])
    monkeypatch.setitem(sys.modules, "h5py", None)
    with pytest.raises(ImportError, match=r"pip install 'hiapi\[keras-format\]'"):
        model.save(tmp_path / "m.keras")


def test_a_keras_argument_hiapi_lacks_is_refused_with_its_name(tmp_path):
    source = DATA / "keras" / "mlp.keras"
    with zipfile.ZipFile(source) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    config = json.loads(members["config.json"])
    config["config"]["layers"][1]["config"]["lora_rank"] = 4
    members["config.json"] = json.dumps(config).encode()
    with zipfile.ZipFile(tmp_path / "lora.keras", "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    with pytest.raises(ValueError, match=r"layer 'dense' \(Dense\) has lora_rank=4, which "
                                         r"hiapi's Dense does not support"):
        hiapi.models.load_model(tmp_path / "lora.keras")


def test_keras_loads_what_hiapi_wrote_and_predicts_the_same(tmp_path):
    python = os.environ.get("HIAPI_KERAS_PYTHON")
    if not python:
        pytest.skip("HIAPI_KERAS_PYTHON is unset: it names a Python with Keras 3 "
                    "(pip install 'hiapi[keras-ref]' in a separate venv; .ci/run makes "
                    ".venv-keras)")
    arrays = save_all(tmp_path)
    script = pathlib.Path(__file__).with_name("keras_reference.py")
    env = {**os.environ, "KERAS_BACKEND": "numpy", "JAX_PLATFORMS": "cpu"}
    subprocess.run([python, str(script), str(tmp_path)], check=True, env=env, timeout=600)
    keras_outputs = np.load(tmp_path / "keras_outputs.npz")
    for name in {**MODELS, **ZOO}:
        hiapi_keys = [k for k in arrays if k.startswith(f"{name}/hiapi_y")]
        assert hiapi_keys
        for key in hiapi_keys:
            index = key.rsplit("hiapi_y", 1)[1]
            for prefix in ("y", "weights_y"):
                np.testing.assert_allclose(keras_outputs[f"{name}/{prefix}{index}"],
                                           arrays[key], rtol=1e-5, atol=1e-5)
        if name in ZOO:
            continue
        assert str(keras_outputs[f"{name}/optimizer"]) == KERAS_OPTIMIZERS[name]
        assert int(keras_outputs[f"{name}/iterations"]) == 1


@pytest.mark.parametrize("suffix", ["keras", "hiapi"])
def test_initial_state_call_saves_and_loads(tmp_path, suffix):
    enc_in, dec_in = hiapi.Input((None, 3)), hiapi.Input((None, 3))
    _, h, c = layers.LSTM(4, return_state=True, name="encoder")(enc_in)
    out = layers.LSTM(4, name="decoder")(dec_in, initial_state=[h, c])
    model = hiapi.Model([enc_in, dec_in], out)
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(2, 5, 3)), rng.normal(size=(2, 6, 3))
    model.save(tmp_path / f"m.{suffix}")
    loaded = hiapi.models.load_model(tmp_path / f"m.{suffix}")
    np.testing.assert_allclose(loaded.predict([x, y], verbose=0),
                               model.predict([x, y], verbose=0), rtol=1e-6)
    if suffix == "keras":         # Keras's form: decoder(x, initial_state=[h, c])
        with zipfile.ZipFile(tmp_path / "m.keras") as archive:
            config = json.loads(archive.read("config.json"))
        decoder = next(e for e in config["config"]["layers"] if e["name"] == "decoder")
        node = decoder["inbound_nodes"][0]
        assert len(node["args"]) == 1 and [s["config"]["keras_history"] for s in
                                            node["kwargs"]["initial_state"]] == \
            [["encoder", 0, 1], ["encoder", 0, 2]]
