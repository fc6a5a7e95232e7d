"""model.save / load_model, save_weights / load_weights: round trips, lossless resume in a new
process, atomicity under SIGKILL, and the errors for bad files and mismatched models."""
import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import hiapi
from hiapi import layers

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def mlp(optimizer=None, seed=0):
    hiapi.utils.set_random_seed(seed)
    model = hiapi.Sequential([hiapi.Input(shape=(6,)), layers.Dense(8, activation="tanh"),
                              layers.Dense(3, activation="softmax")])
    model.compile(optimizer=optimizer or hiapi.optimizers.Adam(0.01),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


@pytest.fixture
def data():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(90, 6)).astype(np.float32)
    return x, (x[:, 0] > 0).astype(int) + (x[:, 1] > 0)


def assert_same(a_list, b_list):
    assert len(a_list) == len(b_list)
    for a, b in zip(a_list, b_list):
        np.testing.assert_array_equal(a, b)


def test_round_trip_keeps_weights_optimizer_state_and_compile(data, tmp_path):
    x, y = data
    model = mlp(hiapi.optimizers.SGD(0.1, momentum=0.9, nesterov=True))
    model.fit(x, y, epochs=2, verbose=0)
    model.save(tmp_path / "m.hiapi")
    loaded = hiapi.models.load_model(tmp_path / "m.hiapi")
    assert_same(loaded.get_weights(), model.get_weights())
    assert_same([v.numpy() for v in loaded.optimizer.variables],
                [v.numpy() for v in model.optimizer.variables])
    assert loaded.optimizer.get_config() == model.optimizer.get_config()
    assert [l.name for l in loaded.layers] == [l.name for l in model.layers]
    assert loaded.evaluate(x, y, verbose=0) == model.evaluate(x, y, verbose=0)
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))


def test_functional_model_with_a_shared_layer_round_trips(tmp_path):
    inputs = hiapi.Input(shape=(4,), name="features")
    shared = layers.Dense(4, activation="tanh", name="shared")
    outputs = layers.Dense(2, name="head")(shared(shared(inputs)))
    model = hiapi.Model(inputs, outputs, name="twice")
    model.save(tmp_path / "f.hiapi")
    loaded = hiapi.models.load_model(tmp_path / "f.hiapi")
    x = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
    assert len(loaded.weights) == 4 and loaded.name == "twice"


def test_learning_rate_schedule_survives_saving(data, tmp_path):
    x, y = data
    schedule = hiapi.optimizers.schedules.LinearWarmup(
        hiapi.optimizers.schedules.CosineDecay(0.1, 100), warmup_steps=5)
    model = mlp(hiapi.optimizers.SGD(schedule, momentum=0.9))
    model.fit(x, y, epochs=1, verbose=0)
    model.save(tmp_path / "s.hiapi")
    loaded = hiapi.models.load_model(tmp_path / "s.hiapi")
    assert loaded.optimizer.current_learning_rate() == model.optimizer.current_learning_rate()


RESUME_SCRIPT = textwrap.dedent("""
    import sys, json
    import numpy as np
    import hiapi
    from hiapi import layers
    mode, path = sys.argv[1], sys.argv[2]
    seed = sys.argv[3] if len(sys.argv) > 3 else "3"
    if seed != "none":                     # a resumed process need not repeat the seed
        hiapi.utils.set_random_seed(int(seed))
    (x, y), _ = hiapi.datasets.mnist.load_data()
    x, y = x[:600] / 255.0, y[:600]
    if mode == "resume":
        model = hiapi.models.load_model(path)
        history = model.fit(x, y, batch_size=64, epochs=4, initial_epoch=2, verbose=0,
                            validation_split=0.1)
    else:
        model = hiapi.Sequential([hiapi.Input(shape=(28, 28)), layers.Flatten(),
                                  layers.Dense(32, activation="relu"), layers.Dropout(0.3),
                                  layers.Dense(10)])
        schedule = hiapi.optimizers.schedules.ExponentialDecay(0.01, 10, 0.9)
        model.compile(optimizer=hiapi.optimizers.Adam(schedule, amsgrad=True),
                      loss=hiapi.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"])
        history = model.fit(x, y, batch_size=64, epochs=4 if mode == "straight" else 2,
                            verbose=0, validation_split=0.1)
    model.save(path)
    print(json.dumps(history.history))
""")


def run_script(*args):
    result = subprocess.run([sys.executable, "-c", RESUME_SCRIPT, *args], capture_output=True,
                            text=True, timeout=120, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    import json
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("resume_seed", ["3", "none", "99"])
def test_resume_in_a_new_process_is_bit_identical(tmp_path, resume_seed):
    """4 epochs straight == 2 epochs, save, new process, load, 2 more epochs: same weights,
    optimizer slots and History, bit for bit, whatever seed (if any) the new process sets:
    the batch order's seed and the dropout state travel in the file."""
    straight_history = run_script("straight", str(tmp_path / "straight.hiapi"))
    run_script("first-half", str(tmp_path / "resumed.hiapi"))
    resumed_history = run_script("resume", str(tmp_path / "resumed.hiapi"), resume_seed)
    straight = hiapi.models.load_model(tmp_path / "straight.hiapi")
    resumed = hiapi.models.load_model(tmp_path / "resumed.hiapi")
    assert_same(resumed.get_weights(), straight.get_weights())
    assert_same([v.numpy() for v in resumed.optimizer.variables],
                [v.numpy() for v in straight.optimizer.variables])
    assert int(resumed.optimizer.iterations.numpy()) == 4 * 9
    for key, values in straight_history.items():
        assert resumed_history[key] == values[2:], key


KILL_SCRIPT = textwrap.dedent("""
    import sys, time
    import numpy as np
    import hiapi
    from hiapi import layers
    import hiapi.saving.archive as archive
    path = sys.argv[1]
    model = hiapi.Sequential([hiapi.Input(shape=(4,)), layers.Dense(256), layers.Dense(2)])
    model.compile(optimizer="sgd", loss="mse")
    model.save(path)                       # the checkpoint that must survive
    print("SAVED", flush=True)
    real_save = np.save
    def slow_save(*args, **kwargs):        # stall mid-write, with bytes already in the file
        real_save(*args, **kwargs)
        print("WRITING", flush=True)
        time.sleep(60)
    archive.np.save = slow_save
    model.set_weights([w + 1 for w in model.get_weights()])
    model.save(path)
""")


def test_sigkill_while_writing_a_checkpoint_leaves_the_previous_one_loadable(tmp_path):
    path = tmp_path / "ckpt.hiapi"
    child = subprocess.Popen([sys.executable, "-c", KILL_SCRIPT, str(path)],
                             stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert child.stdout.readline().strip() == "SAVED"
        saved = hiapi.models.load_model(path).get_weights()
        assert child.stdout.readline().strip() == "WRITING"
        temporaries = [p for p in tmp_path.iterdir() if p.name != "ckpt.hiapi"]
        assert len(temporaries) == 1 and temporaries[0].stat().st_size > 0  # really mid-write
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    assert_same(hiapi.models.load_model(path).get_weights(), saved)
    # the dead writer's temporary names the file and the process, and the next save removes it
    leftover = temporaries[0]
    assert leftover.exists()
    assert leftover.name.startswith(".ckpt.hiapi.tmp-") and f"-{child.pid}-" in leftover.name
    hiapi.models.load_model(path).save(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt.hiapi"]


def test_a_live_writers_temporary_is_left_alone(tmp_path):
    """Only temporaries of dead processes are stale: a concurrent writer's survives."""
    from hiapi.runtime.atomic import temporary_name
    path = tmp_path / "m.hiapi"
    live = tmp_path / temporary_name(path).replace(f"-{os.getpid()}-", f"-{os.getppid()}-")
    live.write_bytes(b"partial")
    unrelated = tmp_path / ".m.hiapi.tmp-notes"
    unrelated.write_bytes(b"mine")
    mlp().save(path)
    assert live.exists() and unrelated.exists()


@pytest.mark.parametrize("umask", [0o022, 0o027, 0o002])
def test_saved_files_get_the_mode_a_plain_open_gives(tmp_path, umask):
    previous = os.umask(umask)
    try:
        with open(tmp_path / "plain", "wb"):
            pass
        model = mlp()
        model.save(tmp_path / "m.hiapi")
        model.save_weights(tmp_path / "w.weights")
    finally:
        os.umask(previous)
    expected = os.stat(tmp_path / "plain").st_mode & 0o777
    assert expected == 0o666 & ~umask
    for name in ("m.hiapi", "w.weights"):
        assert os.stat(tmp_path / name).st_mode & 0o777 == expected, name


def test_truncated_and_foreign_files_are_rejected(data, tmp_path):
    model = mlp()
    model.save(tmp_path / "m.hiapi")
    blob = (tmp_path / "m.hiapi").read_bytes()
    (tmp_path / "cut.hiapi").write_bytes(blob[: len(blob) // 2])
    with pytest.raises(ValueError, match="not a complete hiapi file"):
        hiapi.models.load_model(tmp_path / "cut.hiapi")
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(ValueError, match="not a complete hiapi file"):
        hiapi.models.load_model(tmp_path / "notes.txt")
    corrupted = bytearray(blob)
    corrupted[len(blob) // 3] ^= 0xFF
    (tmp_path / "bad.hiapi").write_bytes(bytes(corrupted))
    with pytest.raises(ValueError, match="corrupted|not a complete"):
        hiapi.models.load_model(tmp_path / "bad.hiapi")
    model.save_weights(tmp_path / "w.weights")
    with pytest.raises(ValueError, match="use load_weights"):
        hiapi.models.load_model(tmp_path / "w.weights")


def test_load_weights_names_the_first_mismatching_layer(tmp_path):
    mlp().save_weights(tmp_path / "w.weights")
    hiapi.utils.clear_session()
    other = hiapi.Sequential([hiapi.Input(shape=(6,)), layers.Dense(8, name="hidden"),
                              layers.Dense(4, name="out")])
    with pytest.raises(ValueError, match=r"layer 1 'out' has weights of shapes "
                                         r"\[\(8, 4\), \(4,\)\].*\[\(8, 3\), \(3,\)\]"):
        other.load_weights(tmp_path / "w.weights")
    fewer = hiapi.Sequential([hiapi.Input(shape=(6,)), layers.Dense(3)])
    with pytest.raises(ValueError, match="has 2 layers, model .* has 1"):
        fewer.load_weights(tmp_path / "w.weights")


@hiapi.saving.register_keras_serializable(package="tests")
class Scale(layers.Layer):
    def __init__(self, factor=2.0, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor

    def build(self, input_shape):
        self.scale = self.add_weight((input_shape[-1],), "ones", "scale")

    def call(self, inputs, training=None):
        return inputs * self.scale.read * self.factor

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


def test_custom_layer_through_registration(tmp_path):
    model = hiapi.Sequential([hiapi.Input(shape=(3,)), Scale(3.0), layers.Dense(2)])
    model.save(tmp_path / "c.hiapi")
    loaded = hiapi.models.load_model(tmp_path / "c.hiapi")
    assert isinstance(loaded.layers[0], Scale) and loaded.layers[0].factor == 3.0
    x = np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))

    class Unregistered(Scale):
        pass

    hiapi.Sequential([hiapi.Input(shape=(3,)), Unregistered()]).save(tmp_path / "u.hiapi")
    with pytest.raises(ValueError, match="Unknown class 'Unregistered'.*register"):
        hiapi.models.load_model(tmp_path / "u.hiapi")


def test_keras_models_save_model_is_model_save(tmp_path):
    """The serialization guide: keras.models.save_model(model, path) is model.save(path)."""
    model = hiapi.Sequential([hiapi.Input((5,)), layers.Dense(2)])
    hiapi.models.save_model(model, tmp_path / "s.keras")
    x = np.ones((3, 5), "float32")
    loaded = hiapi.models.load_model(tmp_path / "s.keras")
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
