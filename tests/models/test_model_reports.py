"""summary() widths, memory_report()'s return value, and saving under Keras file names."""
import io
import zipfile

import numpy as np
import pytest

import hiapi
from hiapi import layers


def model_with_long_names():
    return hiapi.Sequential([
        hiapi.Input((8,)), layers.Dense(4, name="a_rather_long_dense_layer_name_here"),
        layers.BatchNormalization(name="batch_normalization_with_long_name"), layers.Dense(2)])


def test_summary_keeps_long_layer_and_class_names_whole():
    lines = []
    assert model_with_long_names().summary(print_fn=lines.append) is None
    text = "\n".join(lines)
    assert "batch_normalization_with_long_name (BatchNormalization)" in text
    rows = [line for line in text.splitlines() if "(Dense)" in line or "(Batch" in line]
    params = [line.split()[-1] for line in rows]
    assert params == ["36", "16", "10"]
    widths = {len(line) for line in text.splitlines() if line.startswith("━")}
    assert len(widths) == 1 and all(len(r) == widths.pop() for r in rows[:1])
    short = []
    hiapi.Sequential([hiapi.Input((3,)), layers.Dense(1)]).summary(print_fn=short.append)
    assert len(short[0].splitlines()[1]) == 86            # the default width is kept


def test_memory_report_prints_once_and_returns_none(capsys):
    model = hiapi.Sequential([hiapi.Input((3,)), layers.Dense(2)])
    model.compile(optimizer="sgd", loss="mse")
    model.train_on_batch(np.ones((4, 3), np.float32), np.ones((4, 2), np.float32))
    assert model.memory_report() is None
    printed = capsys.readouterr().out
    assert printed.count("Memory report") == 1


def test_keras_names_get_keras_formats_and_legacy_h5_names_warn(tmp_path):
    model = hiapi.Sequential([hiapi.Input((3,)), layers.Dense(2)])
    model.compile(optimizer="sgd", loss="mse")
    model.save(str(tmp_path / "m.keras"))     # Keras 3's format: no warning (they are errors)
    with zipfile.ZipFile(tmp_path / "m.keras") as archive:
        assert "config.json" in archive.namelist()
    loaded = hiapi.models.load_model(tmp_path / "m.keras")
    for a, b in zip(model.get_weights(), loaded.get_weights()):
        np.testing.assert_array_equal(a, b)
    model.save_weights(str(tmp_path / "w.weights.h5"))
    with open(tmp_path / "w.weights.h5", "rb") as handle:
        assert handle.read(4) == b"\x89HDF"
    with pytest.warns(UserWarning, match=r"save\('.*m\.h5'\): hiapi writes its own format.*"
                                         r"Keras cannot.*'\.keras'.*'\.hiapi'"):
        model.save(str(tmp_path / "m.h5"))
    hiapi.models.load_model(tmp_path / "m.h5")
    model.save(tmp_path / "m.hiapi")


def test_loading_an_incomplete_keras_file_says_what_is_wrong(tmp_path):
    path = tmp_path / "from_keras.keras"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("config.json", "{}")
        archive.writestr("metadata.json", "{}")
        archive.writestr("model.weights.h5", io.BytesIO(b"\x89HDF").getvalue())
    with pytest.raises(ValueError, match="not a complete Keras .keras file"):
        hiapi.models.load_model(path)


def test_summary_takes_keras_arguments():
    inner = hiapi.Sequential([hiapi.Input((4,)), layers.Dense(3, name="inner_dense")],
                             name="block")
    model = hiapi.Sequential([hiapi.Input((8,)), layers.Dense(4, name="first"),
                              layers.BatchNormalization(name="bn"), layers.Dense(4, name="last"),
                              inner])
    model.layers[1].trainable = False
    lines = []
    model.summary(show_trainable=True, expand_nested=True, print_fn=lines.append)
    rows = {line.split()[0].strip(): line for line in lines[0].splitlines()[4:9]}
    assert rows["bn"].endswith("N") and rows["first"].endswith("Y")
    assert "  inner_dense (Dense)" in lines[0]
    lines = []
    model.summary(line_length=120, layer_range=("bn", "last"), print_fn=lines.append)
    text = lines[0]
    assert "bn (BatchNormalization)" in text and "last (Dense)" in text
    assert "first" not in text and "block" not in text
    assert len(text.splitlines()[1]) == 120
    lines = []
    model.summary(positions=[30, 60, 75], print_fn=lines.append)
    assert lines[0].splitlines()[2].index("Output Shape") == 30
    with pytest.raises(ValueError, match="layer_range .* does not match"):
        model.summary(layer_range=("nope", "last"))


def test_summary_of_a_branching_model_has_keras_connected_to_column():
    # the functional API guide's toy ResNet: Keras 3 adds "Connected to" for a non-chain
    inputs = hiapi.Input(shape=(8, 8, 3), name="img")
    x = layers.Conv2D(4, 3, name="c1")(inputs)
    block = layers.MaxPooling2D(2, name="pool")(x)
    x = layers.Conv2D(4, 3, padding="same", name="c2")(block)
    added = layers.add([x, block], name="sum")
    shared = layers.Dense(2, name="shared")
    outputs = layers.Concatenate(name="cat")([shared(layers.GlobalAveragePooling2D(name="f")(added)),
                                             shared(layers.GlobalMaxPooling2D(name="g")(added))])
    lines = []
    hiapi.Model(inputs, outputs, name="branchy").summary(print_fn=lines.append)
    rows = {line.split()[0]: line for line in lines[0].splitlines()[4:-4]}
    assert "Connected to" in lines[0].splitlines()[2]
    assert rows["img"].endswith(" -")
    assert rows["c1"].endswith("img[0][0]")
    assert rows["sum"].endswith("c2[0][0], pool[0][0]")
    assert rows["shared"].endswith("f[0][0], g[0][0]")        # called twice: both calls
    assert rows["cat"].endswith("shared[0][0], shared[1][0]")


def test_summary_of_a_chain_has_no_connections_and_names_functional_models():
    inputs = hiapi.Input(shape=(4,), name="x")
    inner = hiapi.Model(inputs, layers.Dense(3, name="d")(inputs), name="inner")
    outer_in = hiapi.Input(shape=(4,), name="y")
    lines = []
    hiapi.Model(outer_in, inner(outer_in), name="outer").summary(print_fn=lines.append)
    text = lines[0]
    assert "Connected to" not in text
    assert "inner (Functional)" in text                 # Keras's class for such a model
