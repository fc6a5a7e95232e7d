"""Each callback's documented behaviour, on a tiny regression model whose losses we control."""
import csv
import math

import numpy as np
import pytest

import hiapi
from hiapi import callbacks, layers


def tiny_model(lr=0.05, optimizer=None, seed=0):
    hiapi.utils.set_random_seed(seed)
    model = hiapi.Sequential([hiapi.Input(shape=(3,)), layers.Dense(1)])
    model.compile(optimizer=optimizer or hiapi.optimizers.SGD(lr), loss="mse")
    return model


@pytest.fixture
def regression():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 3)).astype(np.float32)
    return x, x @ np.array([[1.0], [-2.0], [0.5]], np.float32)


class ScriptedLoss(callbacks.Callback):
    """Overwrites the monitored value with a script, to test monitors deterministically."""

    def __init__(self, values, key="val_loss"):
        super().__init__()
        self.values, self.key = values, key

    def on_epoch_end(self, epoch, logs=None):
        logs[self.key] = self.values[epoch]


def test_early_stopping_stops_at_the_right_epoch_and_restores_best(regression):
    x, y = regression
    model = tiny_model()
    script = [5.0, 4.0, 3.0, 3.5, 3.2, 3.1, 1.0]          # best at epoch 2, then 3 worse
    weights = {}
    snapshot = callbacks.LambdaCallback(
        on_epoch_end=lambda epoch, logs: weights.__setitem__(epoch, model.get_weights()))
    stopper = callbacks.EarlyStopping(patience=3, restore_best_weights=True)
    history = model.fit(x, y, epochs=7, verbose=0,
                        callbacks=[ScriptedLoss(script), snapshot, stopper])
    assert history.epoch == [0, 1, 2, 3, 4, 5]                 # stopped after epoch 5
    assert stopper.stopped_epoch == 5 and stopper.best_epoch == 2
    for a, b in zip(model.get_weights(), weights[2]):
        np.testing.assert_array_equal(a, b)


def test_early_stopping_min_delta_and_mode_max(regression):
    x, y = regression
    stopper = callbacks.EarlyStopping(monitor="val_accuracy", min_delta=0.05, patience=1)
    history = tiny_model().fit(x, y, epochs=5, verbose=0, callbacks=[
        ScriptedLoss([0.5, 0.52, 0.53, 0.9, 0.95], key="val_accuracy"), stopper])
    assert stopper.watch.mode == "max"
    assert history.epoch == [0, 1]        # +0.02 is not an improvement of more than 0.05


def test_reduce_lr_on_plateau(regression):
    x, y = regression
    model = tiny_model(lr=0.1)
    reducer = callbacks.ReduceLROnPlateau(factor=0.5, patience=2, cooldown=1, min_lr=0.02)
    history = model.fit(x, y, epochs=8, verbose=0, callbacks=[
        ScriptedLoss([1.0] * 8), reducer])
    # no improvement after epoch 0: wait reaches 2 at epoch 2 (-> 0.05, logged from epoch 3);
    # the cooldown epoch resets wait, which reaches 2 again at epochs 4 and 6; min_lr floors
    assert history.history["learning_rate"] == pytest.approx(
        [0.1, 0.1, 0.1, 0.05, 0.05, 0.025, 0.025, 0.02])
    assert model.optimizer.learning_rate == pytest.approx(0.02)


def test_learning_rate_scheduler_sets_rate_each_epoch_and_logs_it(regression):
    x, y = regression
    model = tiny_model(lr=0.1)
    history = model.fit(x, y, epochs=3, verbose=0, callbacks=[
        callbacks.LearningRateScheduler(lambda epoch, lr: 0.1 / (epoch + 1))])
    assert history.history["learning_rate"] == pytest.approx([0.1, 0.05, 0.1 / 3])


def test_fit_logs_no_learning_rate_unless_a_callback_sets_it_as_in_keras(regression):
    # Keras's epoch logs (and so History, CSVLogger, the progress line) hold the loss and
    # metrics only; its LearningRateScheduler and ReduceLROnPlateau add learning_rate
    x, y = regression
    schedule = hiapi.optimizers.schedules.PiecewiseConstantDecay([1], [0.1, 0.01])
    model = tiny_model(optimizer=hiapi.optimizers.SGD(schedule))
    history = model.fit(x, y, batch_size=32, epochs=2, verbose=0)
    assert sorted(history.history) == ["loss"]
    assert model.optimizer.current_learning_rate() == pytest.approx(0.01)   # 4 steps: past 1
    with pytest.raises(TypeError, match="needs a plain number"):
        tiny_model(optimizer=hiapi.optimizers.SGD(schedule)).fit(
            x, y, epochs=1, verbose=0, callbacks=[callbacks.ReduceLROnPlateau()])


def test_terminate_on_nan_stops_without_error(regression):
    x, y = regression
    model = tiny_model(lr=1e30)
    history = model.fit(x * 1e10, y, batch_size=8, epochs=3, verbose=0,
                        callbacks=[callbacks.TerminateOnNaN()])
    assert len(history.epoch) == 1 and not math.isfinite(history.history["loss"][0])


def test_csv_logger_appends_on_resume(regression, tmp_path):
    x, y = regression
    path = tmp_path / "log.csv"
    model = tiny_model()
    model.fit(x, y, epochs=2, verbose=0, callbacks=[callbacks.CSVLogger(path)])
    model.fit(x, y, epochs=4, initial_epoch=2, verbose=0,
              callbacks=[callbacks.CSVLogger(path, append=True)])
    rows = list(csv.reader(open(path)))
    assert rows[0] == ["epoch", "loss"]
    assert [r[0] for r in rows[1:]] == ["0", "1", "2", "3"]
    assert float(rows[-1][1]) < float(rows[1][1])


def test_lambda_callback_and_unknown_hook():
    calls = []
    cb = callbacks.LambdaCallback(on_train_begin=lambda logs: calls.append("begin"))
    cb.on_train_begin({})
    assert calls == ["begin"]
    with pytest.raises(TypeError, match="unknown hook"):
        callbacks.LambdaCallback(on_epoch_ending=print)


def test_model_checkpoint_templates_and_save_best_only(regression, tmp_path):
    x, y = regression
    model = tiny_model()
    template = str(tmp_path / "ckpt-{epoch:02d}-{val_loss:.1f}.hiapi")
    model.fit(x, y, epochs=4, verbose=0, callbacks=[
        ScriptedLoss([3.0, 2.0, 2.5, 1.0]),
        callbacks.ModelCheckpoint(template, save_best_only=True)])
    assert sorted(p.name for p in tmp_path.iterdir()) == \
        ["ckpt-01-3.0.hiapi", "ckpt-02-2.0.hiapi", "ckpt-04-1.0.hiapi"]
    restored = hiapi.models.load_model(tmp_path / "ckpt-04-1.0.hiapi")
    for a, b in zip(restored.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(a, b)
    weights_only = tmp_path / "w-{epoch}.weights"
    model.fit(x, y, epochs=1, verbose=0, callbacks=[
        callbacks.ModelCheckpoint(str(weights_only), save_weights_only=True,
                                  monitor="loss")])
    other = tiny_model(seed=5)
    other.load_weights(tmp_path / "w-1.weights")
    for a, b in zip(other.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("shuffle", [True, "batch"])
def test_backup_and_restore_resumes_at_epoch_and_step(regression, tmp_path, shuffle):
    """An interrupted fit resumed with BackupAndRestore ends with the same weights as an
    uninterrupted one (the resumed epoch draws the same order, chunked or not)."""
    x, y = regression
    straight = tiny_model(optimizer=hiapi.optimizers.SGD(0.05, momentum=0.9))
    straight.fit(x, y, batch_size=8, epochs=3, verbose=0, shuffle=shuffle)

    class Interrupt(callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if self.params and self.model.optimizer.iterations.numpy() == 13:
                raise KeyboardInterrupt

    backup = callbacks.BackupAndRestore(tmp_path, save_freq=2)
    model = tiny_model(optimizer=hiapi.optimizers.SGD(0.05, momentum=0.9))
    with pytest.raises(KeyboardInterrupt):
        model.fit(x, y, batch_size=8, epochs=3, verbose=0, callbacks=[backup, Interrupt()],
                  shuffle=shuffle)
    assert (tmp_path / "latest.hiapi").exists()          # made at step 12: epoch 1, batch 4
    resumed = tiny_model(optimizer=hiapi.optimizers.SGD(0.05, momentum=0.9), seed=99)
    history = resumed.fit(x, y, batch_size=8, epochs=3, verbose=0, shuffle=shuffle,
                          callbacks=[callbacks.BackupAndRestore(tmp_path, save_freq=2)])
    assert history.epoch == [1, 2]
    assert int(resumed.optimizer.iterations.numpy()) == 24
    for a, b in zip(resumed.get_weights(), straight.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert not (tmp_path / "latest.hiapi").exists()     # deleted after a normal end


def test_mid_epoch_resume_logs_what_the_uninterrupted_epoch_logged(tmp_path):
    """The backup holds the epoch's running loss and metric totals, so the resumed epoch logs
    the uninterrupted run's numbers exactly, not the mean over its remaining batches."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=(80, 4)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(int)

    def classifier(seed=0):
        hiapi.utils.set_random_seed(seed)
        model = hiapi.Sequential([hiapi.Input(shape=(4,)), layers.Dense(8, activation="relu"),
                                  layers.Dense(2, activation="softmax")])
        model.compile(optimizer=hiapi.optimizers.SGD(0.1), metrics=["accuracy"],
                      loss="sparse_categorical_crossentropy")
        return model

    straight = classifier().fit(x, y, batch_size=8, epochs=3, verbose=0).history

    class Interrupt(callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if self.model.optimizer.iterations.numpy() == 17:      # epoch 1, batch 6
                raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        classifier().fit(x, y, batch_size=8, epochs=3, verbose=0, callbacks=[
            callbacks.BackupAndRestore(tmp_path, save_freq=3), Interrupt()])
    resumed = classifier(seed=7).fit(x, y, batch_size=8, epochs=3, verbose=0, callbacks=[
        callbacks.BackupAndRestore(tmp_path, save_freq=3)])
    assert resumed.epoch == [1, 2]
    for key in ("loss", "accuracy"):
        assert resumed.history[key] == straight[key][1:], key


def test_a_backup_from_a_differently_compiled_model_is_refused(regression, tmp_path):
    x, y = regression

    class Interrupt(callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 3:
                raise KeyboardInterrupt

    with_metric = tiny_model()
    with_metric.compile(optimizer=hiapi.optimizers.SGD(0.05), loss="mse", metrics=["mae"])
    with pytest.raises(KeyboardInterrupt):
        with_metric.fit(x, y, batch_size=8, epochs=2, verbose=0, callbacks=[
            callbacks.BackupAndRestore(tmp_path, save_freq=2), Interrupt()])
    with pytest.raises(ValueError, match="BackupAndRestore: the running loss/metric totals"):
        tiny_model().fit(x, y, batch_size=8, epochs=2, verbose=0,
                         callbacks=[callbacks.BackupAndRestore(tmp_path, save_freq=2)])
