"""TensorBoard: the event files are read back record by record (TFRecord framing with its
CRCs checked, then tensorboardX's ``Event`` protobuf) and compared with what fit reported."""
import json
import struct
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import hiapi
from hiapi import layers

from mpi import run_mpi

pytest.importorskip("tensorboardX")
from tensorboardX.crc32c import crc32c                                    # noqa: E402
from tensorboardX.proto import event_pb2                                  # noqa: E402


def masked_crc(data):
    """TFRecord's masked CRC-32C, written out here so the reader checks the writer."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def read_events(directory):
    """Every ``Event`` of every event file in ``directory``, in file order."""
    events = []
    for path in sorted(Path(directory).glob("events.out.tfevents.*")):
        data, at = path.read_bytes(), 0
        while at < len(data):
            header = data[at:at + 8]
            (length,) = struct.unpack("<Q", header)
            assert struct.unpack("<I", data[at + 8:at + 12])[0] == masked_crc(header)
            body = data[at + 12:at + 12 + length]
            assert struct.unpack("<I", data[at + 12 + length:at + 16 + length])[0] == \
                masked_crc(body)
            events.append(event_pb2.Event.FromString(body))
            at += 16 + length
    return events


def summaries(directory, kind):
    """``{tag: {step: value}}`` of the ``simple_value`` scalars or the histograms."""
    found = {}
    for event in read_events(directory):
        for value in event.summary.value:
            if kind == "scalar" and value.HasField("simple_value"):
                found.setdefault(value.tag, {})[event.step] = value.simple_value
            elif kind == value.WhichOneof("value") and kind in ("histo", "image"):
                found.setdefault(value.tag, {})[event.step] = getattr(value, kind)
    return found


def as_logged(values):
    """Event files hold float32 scalars."""
    return [float(np.float32(v)) for v in values]


def classifier():
    hiapi.backend.clear_session()                    # layer names dense, dense_1
    hiapi.utils.set_random_seed(5)
    model = hiapi.Sequential([hiapi.Input(shape=(4,)), layers.Dense(6, activation="relu"),
                              layers.Dense(3, activation="softmax")])
    model.compile(optimizer=hiapi.optimizers.SGD(0.1), loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    rng = np.random.default_rng(0)
    x = rng.normal(size=(120, 4)).astype(np.float32)
    return model, x, (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 0)


def test_epoch_scalars_equal_history_in_train_and_validation(tmp_path):
    model, x, y = classifier()
    history = model.fit(x, y, batch_size=16, epochs=3, validation_split=0.25, verbose=0,
                        callbacks=[hiapi.callbacks.TensorBoard(tmp_path)]).history
    train = summaries(tmp_path / "train", "scalar")
    validation = summaries(tmp_path / "validation", "scalar")
    assert set(train) == {"epoch_loss", "epoch_accuracy", "epoch_learning_rate"}
    for name in ("loss", "accuracy"):
        assert train[f"epoch_{name}"] == dict(enumerate(as_logged(history[name])))
    assert train["epoch_learning_rate"] == dict(enumerate(as_logged([0.1] * 3)))   # optimizer's
    for name in ("loss", "accuracy"):
        assert validation[f"epoch_{name}"] == dict(enumerate(as_logged(history[f"val_{name}"])))
    # each validation is also an evaluation, at step = optimizer iterations (6 batches/epoch)
    assert validation["evaluation_loss_vs_iterations"] == dict(
        zip([6, 12, 18], as_logged(history["val_loss"])))
    assert summaries(tmp_path / "train", "histo") == {}        # histogram_freq=0: none


def test_no_validation_directory_without_validation(tmp_path):
    model, x, y = classifier()
    model.fit(x, y, epochs=1, verbose=0, callbacks=[hiapi.callbacks.TensorBoard(tmp_path)])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train"]


@pytest.mark.parametrize("update_freq, every", [("batch", 1), (2, 2), (5, 5)])
def test_batch_scalars_every_n_batches_equal_the_batch_logs(tmp_path, update_freq, every):
    model, x, y = classifier()
    seen = []
    record = hiapi.callbacks.LambdaCallback(
        on_train_batch_end=lambda batch, logs: seen.append(dict(logs)))
    model.fit(x, y, batch_size=16, epochs=3, validation_split=0.25, verbose=0,
              callbacks=[record, hiapi.callbacks.TensorBoard(tmp_path, update_freq=update_freq)])
    assert len(seen) == 18                           # 90 training samples: 6 batches an epoch
    train = summaries(tmp_path / "train", "scalar")
    steps = range(every, len(seen) + 1, every)       # Keras: the n-th batch of the fit, from 1
    for name in ("loss", "accuracy"):
        assert train[f"batch_{name}"] == dict(
            zip(steps, as_logged(seen[s - 1][name] for s in steps)))
    assert "epoch_loss" in train
    assert not any(tag.startswith("batch_") for tag in summaries(tmp_path / "validation",
                                                                 "scalar"))


def test_histograms_of_every_weight_every_histogram_freq_epochs(tmp_path):
    model, x, y = classifier()
    model.fit(x, y, epochs=3, verbose=0, callbacks=[
        hiapi.callbacks.TensorBoard(tmp_path, histogram_freq=2, write_images=True)])
    histograms = summaries(tmp_path / "train", "histo")
    assert set(histograms) == {f"{w.name}/histogram" for w in model.weights} == {
        "dense/kernel/histogram", "dense/bias/histogram",
        "dense_1/kernel/histogram", "dense_1/bias/histogram"}
    for weight in model.weights:                     # epochs 0 and 2; epoch 2 is the last
        by_step = histograms[f"{weight.name}/histogram"]
        assert sorted(by_step) == [0, 2]
        final, values = by_step[2], weight.numpy()
        assert final.num == values.size
        np.testing.assert_allclose([final.min, final.max, final.sum],
                                   [values.min(), values.max(), values.sum()], rtol=1e-5)
    images = summaries(tmp_path / "train", "image")
    kernel = images["dense/kernel/image"][2]         # (4, 6): wider than tall, kept
    assert (kernel.height, kernel.width) == (4, 6)
    assert (images["dense_1/bias/image"][0].height, images["dense_1/bias/image"][0].width) == \
        (3, 1)                                       # a bias is a column, as Keras


def test_evaluate_logs_an_evaluation_at_the_optimizer_step(tmp_path):
    model, x, y = classifier()
    model.fit(x, y, batch_size=40, epochs=1, verbose=0)
    result = model.evaluate(x, y, verbose=0, return_dict=True,
                            callbacks=[hiapi.callbacks.TensorBoard(tmp_path)])
    validation = summaries(tmp_path / "validation", "scalar")
    assert validation == {f"evaluation_{k}_vs_iterations": {3: as_logged([v])[0]}
                          for k, v in result.items()}


@pytest.mark.parametrize("argument, value, message", [
    ("update_freq", "step", "update_freq must be 'epoch', 'batch' or a positive"),
    ("update_freq", 0, "update_freq must be"),
    ("histogram_freq", -1, "histogram_freq must be a non-negative integer"),
    ("histogram_freq", 1.5, "histogram_freq must be"),
    ("write_graph", "yes", "write_graph must be True or False"),
    ("profile_batch", "a,b", "profile_batch must be 0"),
    ("profile_batch", (5, 2), "profile_batch must be 0"),
    ("embeddings_freq", -2, "embeddings_freq must be"),
    ("log_dir", "", "log_dir must be a non-empty path"),
])
def test_invalid_arguments_are_named(tmp_path, argument, value, message):
    with pytest.raises(ValueError, match=message) as error:
        hiapi.callbacks.TensorBoard(**{"log_dir": tmp_path, argument: value})
    assert repr(value) in str(error.value)


def test_keras_habits_are_accepted_and_only_unmet_requests_warn(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        hiapi.callbacks.TensorBoard(tmp_path, write_graph=True, profile_batch=0,
                                    embeddings_freq=0, write_steps_per_second=True)
    with pytest.warns(UserWarning, match="profile_batch is not honoured"):
        hiapi.callbacks.TensorBoard(tmp_path, profile_batch="10,20")
    with pytest.warns(UserWarning, match="embeddings_freq is not honoured"):
        hiapi.callbacks.TensorBoard(tmp_path, embeddings_freq=1)


def test_steps_per_second_is_logged_when_asked(tmp_path):
    model, x, y = classifier()
    model.fit(x, y, epochs=2, verbose=0, callbacks=[hiapi.callbacks.TensorBoard(
        tmp_path, write_steps_per_second=True, update_freq="batch")])
    train = summaries(tmp_path / "train", "scalar")
    assert sorted(train["epoch_steps_per_second"]) == [0, 1]
    assert len(train["batch_steps_per_second"]) == 8
    assert all(v > 0 for v in train["epoch_steps_per_second"].values())


def test_missing_tensorboardx_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorboardX", None)     # import fails as if absent
    with pytest.raises(ImportError, match=r"pip install 'hiapi\[tensorboard\]'"):
        hiapi.callbacks.TensorBoard(tmp_path)


def test_only_the_chief_writes_under_mpiexec(tmp_path):
    run_mpi(2, "tensorboard_logs.py", tmp_path)
    assert not (tmp_path / "rank_1").exists()
    history = json.load(open(tmp_path / "history_0.json"))
    assert history == json.load(open(tmp_path / "history_1.json"))
    train = summaries(tmp_path / "rank_0" / "train", "scalar")
    validation = summaries(tmp_path / "rank_0" / "validation", "scalar")
    for name in ("loss", "accuracy"):
        assert train[f"epoch_{name}"] == dict(enumerate(as_logged(history[name])))
        assert validation[f"epoch_{name}"] == dict(enumerate(as_logged(history[f"val_{name}"])))
    # 160 training samples, 20 a batch per rank on 2 ranks: 4 global steps an epoch
    assert sorted(train["batch_loss"]) == list(range(1, 9))
    assert len(summaries(tmp_path / "rank_0" / "train", "histo")) == 4     # 2 weights in each of 2 layers


def test_a_non_finite_weight_gets_no_histogram_and_a_warning(tmp_path):
    model, x, y = classifier()
    weights = model.get_weights()
    weights[1][0] = np.nan                           # dense/bias, as after a diverged step
    model.set_weights(weights)
    board = hiapi.callbacks.TensorBoard(tmp_path, histogram_freq=1)
    board.set_model(model)
    board.on_train_begin()
    board.on_epoch_begin(0)
    with pytest.warns(UserWarning, match="weight 'dense/bias' holds NaN or infinite values"):
        board.on_epoch_end(0, {"loss": 1.0})
    board.on_train_end()
    assert set(summaries(tmp_path / "train", "histo")) == {
        "dense/kernel/histogram", "dense_1/kernel/histogram", "dense_1/bias/histogram"}
    assert summaries(tmp_path / "train", "scalar")["epoch_loss"] == {0: 1.0}
