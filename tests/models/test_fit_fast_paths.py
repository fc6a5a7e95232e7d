"""fit()'s fast paths: the finite-data check once per call, the callback hooks every step."""
import numpy as np
import pytest

from hiapi.models import data


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("shape", [(7,), (5, 3), (4, 3, 2), ()])
def test_all_finite_finds_every_bad_value(dtype, shape):
    clean = np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)
    assert data.all_finite(clean)
    for bad in (np.nan, np.inf, -np.inf):
        for position in range(clean.size):
            array = clean.copy()
            array.reshape(-1)[position] = bad
            assert not data.all_finite(array), (bad, position)


def test_all_finite_overflowing_rows_and_strided_views():
    huge = np.full((3, 4), np.finfo(np.float32).max, np.float32)   # row sums overflow
    assert data.all_finite(huge)
    huge[1, 2] = np.nan
    assert not data.all_finite(huge)
    wide = np.ones((6, 8), np.float32)
    wide[2, 1] = np.inf
    assert data.all_finite(wide[:, ::2]) and not data.all_finite(wide[:, 1::2])
    assert data.all_finite(np.zeros((0, 3), np.float32))


def test_callback_list_calls_only_overriding_hooks(monkeypatch):
    from hiapi.callbacks import Callback, CallbackList, LambdaCallback
    base_calls, seen = [], []
    monkeypatch.setattr(Callback, "on_train_batch_begin",
                        lambda self, batch, logs=None: base_calls.append(batch))

    class Overrides(Callback):
        def on_train_batch_begin(self, batch, logs=None):
            seen.append(("subclass", batch, logs))

    hooks = CallbackList([Callback(), Overrides(), LambdaCallback(
        on_train_batch_begin=lambda batch, logs: seen.append(("lambda", batch, logs)))],
        model=None, params={})
    hooks.on_train_batch_begin(0)
    hooks.on_train_batch_begin(1, {"loss": 1.0})
    assert base_calls == []                     # the base class's empty hook is skipped
    assert seen == [("subclass", 0, {}), ("lambda", 0, {}), ("subclass", 1, {"loss": 1.0}),
                    ("lambda", 1, {"loss": 1.0})]
    assert "on_train_batch_begin" in vars(hooks)   # built once, then a plain attribute


def _binary_model(metrics):
    import hiapi
    hiapi.utils.set_random_seed(3)
    model = hiapi.Sequential([hiapi.Input(shape=(4,)), hiapi.layers.Dense(1,
                                                                          activation="sigmoid")])
    model.compile(optimizer="sgd", loss="binary_crossentropy", metrics=metrics)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 4)).astype(np.float32)
    y = (x[:, :1] > 0).astype(np.float32)
    return model, x, y


def test_step_totals_add_like_the_metrics_own_merges():
    """The per-step plan (scalar statistics added in place, the rest merged by the metric)
    gives bit for bit what loss trackers and metrics accumulate on their own."""
    import hiapi
    from hiapi.models.step_totals import StepTotals

    class HostMean(hiapi.metrics.Metric):          # update_state on the host: merged as before
        def __init__(self):
            super().__init__(name="host_mean")
            self.total = self.add_variable((), "zeros", dtype="float64")

        def update_state(self, y_true, y_pred, sample_weight=None):
            self.total.assign_add(np.sum(y_pred))

        def result(self):
            return float(self.total)

    metrics = ["accuracy", hiapi.metrics.Precision(), HostMean()]
    model, x, y = _binary_model(metrics)
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)      # builds the step
    compiled = model._compiled_targets
    step = [f for key, f in model._step_functions.items() if key[0] == "train"][0]
    (sizes,) = compiled._metric_sizes.values()             # one step built: its layout
    tracked = [m for _, m in compiled.metrics]
    compiled.reset()
    reference_trackers = [hiapi.metrics.Mean() for _ in compiled._loss_trackers]
    totals = compiled._totals
    for start in range(0, 40, 8):
        results = step(x[start:start + 8], y[start:start + 8], 0.0, 1.0)   # rate 0: same weights
        copies = [hiapi.metrics.clone(m) if not isinstance(m, HostMean) else None
                  for m in tracked]
        snapshot = [[v.numpy() for v in m.variables] for m in tracked]
        totals.record(results, 8)
        for metric, before, copy in zip(tracked, snapshot, copies):
            if copy is None:
                continue
            for variable, value in zip(copy.variables, before):
                variable.assign(value)
            position = 1 + sum(sizes[:tracked.index(metric)])
            copy.merge_step_outputs(results[position:position + sizes[tracked.index(metric)]])
            for mine, theirs in zip(metric.variables, copy.variables):
                assert np.array_equal(mine.numpy(), theirs.numpy())
        for tracker in reference_trackers:
            tracker.total.assign_add(float(results[0]) * 8)
            tracker.count.assign_add(8)
    for tracker, reference in zip(compiled._loss_trackers, reference_trackers):
        assert tracker.total.numpy() == reference.total.numpy()
        assert tracker.count.numpy() == reference.count.numpy() == 40
    (losses, added, merged), = totals.plans.values()
    assert [metric for metric, _, _ in merged] == tracked[1:]     # vector state, host metric
    assert len(added) == 2                                        # accuracy's total and count
    assert tracked[2].result() == pytest.approx(float(np.sum(model.predict(x, verbose=0))),
                                                rel=1e-5)


def test_weighted_train_metrics_stay_weighted_after_unweighted_validation():
    """A host-side weighted metric takes one more step output (the weights) in a weighted
    train step than in the unweighted validation step built at the end of epoch 1; the
    epochs after it must still record the train step with its own layout."""
    import hiapi
    from hiapi import layers

    class WeightedHostMean(hiapi.metrics.Metric):
        def __init__(self, name="host_mean", **kwargs):
            super().__init__(name=name, **kwargs)
            self.total = self.add_variable(shape=(), initializer="zeros", name="total")
            self.count = self.add_variable(shape=(), initializer="zeros", name="count")

        def update_state(self, y_true, y_pred, sample_weight=None):
            y_pred = np.asarray(y_pred).reshape(-1)
            w = np.ones_like(y_pred) if sample_weight is None else \
                np.asarray(sample_weight).reshape(-1)
            self.total.assign(self.total.numpy() + float(np.sum(y_pred * w)))
            self.count.assign(self.count.numpy() + float(np.sum(w)))

        def result(self):
            return self.total.numpy() / max(self.count.numpy(), 1)

    x = np.random.default_rng(0).random((64, 3)).astype("float32")
    y, weights = x[:, :1] * 2, np.where(np.arange(64) % 2 == 0, 0.0, 3.0)
    runs = []
    for validation in (None, (x, y)):
        hiapi.utils.set_random_seed(1)
        model = hiapi.Sequential([hiapi.Input(shape=(3,)), layers.Dense(1)])
        model.compile(optimizer="sgd", loss="mse", weighted_metrics=[WeightedHostMean()])
        runs.append(model.fit(x, y, sample_weight=weights, validation_data=validation,
                              epochs=3, batch_size=16, verbose=0).history["host_mean"])
    assert runs[0] == runs[1]


def test_batch_logs_are_built_for_the_callbacks_that_read_them():
    import hiapi
    seen = {"reader": [], "ignorer": []}

    class Reader(hiapi.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            seen["reader"].append(dict(logs))

    class Ignorer(hiapi.callbacks.Callback):
        def reads_batch_logs(self, hook, batch):
            return batch == 2

        def on_train_batch_end(self, batch, logs=None):
            seen["ignorer"].append(dict(logs))

    model, x, y = _binary_model(["accuracy"])
    model.fit(x, y, batch_size=8, epochs=1, verbose=0, shuffle=False, callbacks=[Ignorer()])
    assert [sorted(logs) for logs in seen["ignorer"]] == [[], [], ["accuracy", "loss"], [], []]
    seen["ignorer"].clear()
    model, x, y = _binary_model(["accuracy"])
    history = model.fit(x, y, batch_size=8, epochs=1, verbose=0, shuffle=False,
                        callbacks=[Ignorer(), Reader()])
    assert len(seen["reader"]) == 5 and seen["ignorer"] == seen["reader"]   # same dicts
    assert seen["reader"][-1]["loss"] == pytest.approx(history.history["loss"][0], rel=1e-6)
    assert seen["reader"][-1]["accuracy"] == history.history["accuracy"][0]
    losses = [logs["loss"] for logs in seen["reader"]]
    assert len(set(losses)) == 5                                 # running values, every batch


def test_logs_wanted_answers():
    from hiapi.callbacks import Callback, CallbackList, History

    class Reader(Callback):
        def on_test_batch_end(self, batch, logs=None):
            pass
    hooks = CallbackList([History()], model=None, params={})
    assert not hooks.logs_wanted("on_test_batch_end")(0)          # nobody overrides it
    assert not hooks.logs_wanted("on_train_batch_end")(0)
    hooks = CallbackList([History(), Reader()], model=None, params={})
    assert hooks.logs_wanted("on_test_batch_end")(7)
