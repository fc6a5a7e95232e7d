"""CUDA graphs on the cupy backend (``backends/cupy_backend/step_graphs.py``): a step recorded
once and replayed trains exactly as the step launched kernel by kernel.

Each test trains the same model twice from the same seed, with recording on and off
(``HIAPI_CUDA_GRAPHS``), and compares losses and weights: a replay that read a stale batch, a
stale learning rate, an old Variable array or an old random counter would differ at the first
replayed step. Needs cupy and an NVIDIA GPU; skips otherwise.
"""
import numpy as np
import pytest

import hiapi
from hiapi import backends, layers
from hiapi.graph import Function, Variable, ops, placeholder

from test_cupy_backend import GPUS, restore_backend  # noqa: F401  (a fixture)

pytestmark = pytest.mark.skipif(GPUS == 0, reason="needs cupy and a visible NVIDIA GPU")


def mlp():
    model = hiapi.Sequential([hiapi.Input(shape=(20,)), layers.Dense(32, activation="relu"),
                              layers.Dense(10, activation="softmax")])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    return model


def convnet():
    """Convolution, batch normalization's moving statistics, dropout's random counter and a
    learning-rate schedule: the state a replay must not freeze."""
    model = hiapi.Sequential([
        hiapi.Input(shape=(12, 12, 1)), layers.Conv2D(8, 3, activation="relu"),
        layers.BatchNormalization(), layers.MaxPooling2D(), layers.Flatten(),
        layers.Dropout(0.3), layers.Dense(10)])
    schedule = hiapi.optimizers.schedules.ExponentialDecay(0.05, decay_steps=2, decay_rate=0.5)
    model.compile(optimizer=hiapi.optimizers.SGD(schedule, momentum=0.9),
                  loss=hiapi.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    return model


SHAPES = {mlp: (20,), convnet: (12, 12, 1)}


def batches(build, count, rows=16):
    data = np.random.default_rng(7)
    return [(data.random((rows,) + SHAPES[build]).astype(np.float32),
             data.integers(0, 10, rows)) for _ in range(count)]


def step_graphs(model):
    """The StepGraphs of every compiled executable of the model's steps, by step name."""
    found = {}
    for function in model._step_functions.values():
        for executable in function._executables.values():
            found.setdefault(function.name, []).append(executable.replay)
    return found


def train(monkeypatch, build, graphs, between=None):
    monkeypatch.setenv("HIAPI_CUDA_GRAPHS", "1" if graphs else "0")
    backends.set_backend("cupy")
    hiapi.utils.set_random_seed(3)
    model = build()
    logs = []
    for n, (x, y) in enumerate(batches(build, 8)):
        if between is not None:
            between(n, model)
        logs.append(model.train_on_batch(x, y))
    x, y = batches(build, 1, rows=24)[0]
    for _ in range(4):
        logs.append(model.test_on_batch(x, y))
        logs.append(model.predict_on_batch(x))
    return model, logs


def assert_same_training(recorded, plain):
    (model, logs), (reference, reference_logs) = recorded, plain
    for got, want in zip(logs, reference_logs):
        np.testing.assert_allclose(np.ravel(got), np.ravel(want), rtol=1e-5, atol=1e-7)
    for got, want in zip(model.get_weights(), reference.get_weights()):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("build", [mlp, convnet])
def test_replayed_steps_train_as_launched_ones(monkeypatch, restore_backend, build):  # noqa: F811
    recorded = train(monkeypatch, build, graphs=True)
    found = step_graphs(recorded[0])
    for name in ("train_step", "test_step", "predict_step"):
        replay, = found[name]
        assert replay is not None and replay.reason is None, (name, replay.reason)
        assert replay.recordings == 1 and replay.replays >= 2, (name, replay.replays)
    plain = train(monkeypatch, build, graphs=False)
    assert all(r is None for rs in step_graphs(plain[0]).values() for r in rs)
    assert_same_training(recorded, plain)


def test_a_replaced_variable_array_is_recorded_again(monkeypatch, restore_backend):  # noqa: F811
    def replace(n, model):
        if n == 5:      # a new array, not an edit in place: the old graph would not see it
            kernel = model.layers[0].kernel
            kernel.value = kernel.numpy() * 0.5
    recorded = train(monkeypatch, mlp, graphs=True, between=replace)
    replay, = step_graphs(recorded[0])["train_step"]
    assert replay.recordings == 2 and replay.reason is None
    assert_same_training(recorded, train(monkeypatch, mlp, graphs=False, between=replace))


def test_a_bad_label_in_a_replayed_step_raises_before_any_update(monkeypatch,
                                                                 restore_backend):  # noqa: F811
    model, _ = train(monkeypatch, mlp, graphs=True)
    replay, = step_graphs(model)["train_step"]
    assert replay.replays > 0
    before = model.get_weights()
    x, y = batches(mlp, 1)[0]
    y[3] = 11
    with pytest.raises(ValueError, match="label 11 is outside the 10 classes"):
        model.train_on_batch(x, y)
    for got, want in zip(model.get_weights(), before):
        np.testing.assert_array_equal(got, want)
    y[3] = 2
    model.train_on_batch(x, y)          # and the next good step replays and trains
    assert not all(np.array_equal(a, b) for a, b in zip(model.get_weights(), before))


def test_a_step_that_cannot_be_recorded_runs_launched(monkeypatch, restore_backend):  # noqa: F811
    """A kernel that reads the device from the host mid-step fails the recording; the step
    then runs as before, every call, with the reason kept."""
    monkeypatch.setenv("HIAPI_CUDA_GRAPHS", "1")
    backends.set_backend("cupy")
    backend = backends.get_backend()
    plain_sum = backend.kernels["sum"]

    def reading_sum(out, x, **attrs):
        float(x.ravel()[0])                 # a device-to-host copy: not recordable
        plain_sum(out, x, **attrs)
    monkeypatch.setitem(backend.kernels, "sum", reading_sum)
    x = placeholder((None, 3))
    total = Variable(np.zeros((), np.float32))
    f = Function([x], ops.sum(x), updates=[(total, total.read + ops.sum(x))])
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    for n in range(5):
        assert float(f(data * n)) == pytest.approx(15.0 * n)
    replay, = f._executables.values()
    assert replay.replay.replays == 0 and "could not be recorded" in replay.replay.reason
    assert float(total.numpy()) == pytest.approx(15.0 * (0 + 1 + 2 + 3 + 4))
