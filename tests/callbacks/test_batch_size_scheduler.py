"""BatchSizeScheduler (issue #31, Smith et al. 2018): fit's batch size changes at epoch
boundaries as the schedule says, for arrays and for a PyDataset that re-batches; the steps
per epoch follow; on MNIST, growing the batch where the rate would decay reaches the
decaying-rate run's accuracy in fewer steps."""
import numpy as np
import pytest

import hiapi
from hiapi import layers
from hiapi.callbacks import BatchSizeScheduler


class Steps(hiapi.callbacks.Callback):
    def on_train_begin(self, logs=None):
        self.per_epoch, self.sizes = [], []

    def on_epoch_begin(self, epoch, logs=None):
        self.per_epoch.append(0)
        self.sizes.append(self.params["steps"])

    def on_train_batch_end(self, batch, logs=None):
        self.per_epoch[-1] += 1


def model_for(features=6, classes=3):
    hiapi.utils.set_random_seed(0)
    model = hiapi.Sequential([hiapi.Input(shape=(features,)), layers.Dense(8, activation="relu"),
                              layers.Dense(classes, activation="softmax")])
    model.compile(optimizer=hiapi.optimizers.SGD(0.1), loss="sparse_categorical_crossentropy")
    return model


def test_the_steps_per_epoch_follow_the_schedule_for_arrays():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(200, 6)).astype(np.float32), rng.integers(0, 3, 200)
    steps = Steps()
    schedule = BatchSizeScheduler.instead_of_decay(10, boundaries=[1, 3], factor=2)
    history = model_for().fit(x, y, batch_size=10, epochs=4, verbose=0,
                              callbacks=[schedule, steps])
    assert steps.per_epoch == [20, 10, 10, 5] == steps.sizes
    assert history.history["batch_size"] == [10, 20, 20, 40]


def test_a_batch_grown_like_this_trains_like_fit_with_that_batch():
    """Epoch 2 at batch 40 equals a second fit with batch_size=40 on the same weights."""
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(160, 6)).astype(np.float32), rng.integers(0, 3, 160)
    grown = model_for()
    grown.fit(x, y, batch_size=20, epochs=2, shuffle=False, verbose=0,
              callbacks=[BatchSizeScheduler(lambda epoch, size: 20 if epoch == 0 else 40)])
    by_hand = model_for()
    by_hand.fit(x, y, batch_size=20, epochs=1, shuffle=False, verbose=0)
    by_hand.fit(x, y, batch_size=40, epochs=1, shuffle=False, verbose=0)
    for a, b in zip(grown.get_weights(), by_hand.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_a_pydataset_with_a_batch_size_re_batches_and_a_generator_refuses():
    x = np.arange(120, dtype=np.float32)[:, None] / 120
    ds = hiapi.utils.timeseries_dataset_from_array(np.repeat(x, 6, axis=1), np.zeros(120, int),
                                                   sequence_length=1, batch_size=10)
    steps = Steps()
    model = hiapi.Sequential([hiapi.Input(shape=(1, 6)), layers.Flatten(), layers.Dense(3)])
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    model.fit(ds, epochs=3, verbose=0, callbacks=[
        BatchSizeScheduler(lambda epoch, size: 10 * 2 ** epoch), steps])
    assert steps.per_epoch == [12, 6, 3]
    batches = ((x[i:i + 10], np.zeros(10, int)) for i in range(0, 120, 10))
    with pytest.raises(ValueError, match="makes its own batches"):
        model_for(features=1).fit(batches, epochs=2, verbose=0, callbacks=[
            BatchSizeScheduler(lambda epoch, size: 20)])


def test_a_bad_schedule_is_named():
    x, y = np.zeros((20, 6), np.float32), np.zeros(20, int)
    with pytest.raises(ValueError, match="schedule returned 0 for epoch 0"):
        model_for().fit(x, y, epochs=1, verbose=0,
                        callbacks=[BatchSizeScheduler(lambda epoch, size: 0)])


def test_mnist_growing_the_batch_reaches_the_decaying_rate_accuracy_in_fewer_steps():
    """benchmarks/batch_growth.py on 12000 MNIST samples, 6 epochs, factor 5 at epochs 2, 4
    (docs/data.md has the full-size figures)."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import batch_growth
    args = type("Args", (), dict(samples=12000, epochs=6, boundaries="2,4", factor=5.0,
                                 batch=128, lr=0.1))
    data = batch_growth.load(args.samples)
    decay, grow = (batch_growth.run(kind, args, data) for kind in ("decay", "grow"))
    assert decay["steps"] == 6 * 94 and grow["steps"] == 2 * 94 + 2 * 19 + 2 * 4
    assert grow["test_accuracy"] >= decay["test_accuracy"] - 0.005, (decay, grow)
