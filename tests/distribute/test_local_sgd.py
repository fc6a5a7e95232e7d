"""LocalSGDStrategy and EASGDStrategy under real ``mpiexec``: period 1 (and, for EASGD, one
step with workers * alpha = 1) equals synchronous data-parallel SGD; longer periods train, and
every rank ends with one model."""
import json

import numpy as np
import pytest

import hiapi

from mpi import run_mpi


def load(out, name):
    return [np.load(out / f"{name}.npz")[f"arr_{i}"] for i in range(4)]


def assert_close(got, want, atol=1e-5):
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=atol)


@pytest.mark.parametrize("ranks, method, options", [
    (2, "local_sgd", ["--period", 1]),
    (4, "local_sgd", ["--period", 1]),
    (2, "easgd", ["--period", 1, "--alpha", 0.5, "--steps", 1, "--epochs", 1]),
    (4, "easgd", ["--period", 1, "--alpha", 0.25, "--steps", 1, "--epochs", 1])])
def test_exact_averaging_equals_synchronous_sgd(tmp_path, ranks, method, options):
    run_mpi(ranks, "local_sgd.py", tmp_path, method, *options, "--reference", timeout=300)
    reference = load(tmp_path, "reference_0")
    for rank in range(ranks):
        assert_close(load(tmp_path, f"weights_{rank}"), reference)


@pytest.mark.parametrize("method, options", [("local_sgd", ["--period", 4]),
                                             ("easgd", ["--period", 4, "--alpha", 0.45])])
def test_longer_periods_train_and_end_on_one_model(tmp_path, method, options):
    run_mpi(2, "local_sgd.py", tmp_path, method, *options, timeout=300)
    logs = [json.load(open(tmp_path / f"record_{r}.json")) for r in range(2)]
    assert logs[0]["history"] == logs[1]["history"]            # summed over workers
    loss = logs[0]["history"]["loss"]
    assert loss[-1] < 0.75 * loss[0] and logs[0]["history"]["accuracy"][-1] > 0.6
    assert_close(load(tmp_path, "weights_1"), load(tmp_path, "weights_0"), atol=0)
    full = 4 * (28 * 28 * 16 + 16 + 16 * 10 + 10)
    assert logs[0]["bytes"] <= full * (2 * 30 // 4 + 2)     # one model every 4 steps


def test_arguments_are_checked():
    with pytest.raises(ValueError, match="period must be a positive integer"):
        hiapi.distribute.LocalSGDStrategy(period=0)
    with pytest.raises(NotImplementedError, match="compression='topk' is not supported"):
        hiapi.distribute.LocalSGDStrategy(period=2, compression="topk")
    with pytest.raises(ValueError, match="workers \\* alpha = 2"):
        hiapi.distribute.EASGDStrategy(tau=2, alpha=2.0)
    # the spelling, Strategy(algorithm="easgd"), points to the class
    with pytest.raises(ValueError, match="EASGDStrategy\\(tau=..., alpha=...\\)"):
        hiapi.distribute.Strategy(algorithm="easgd")
    with pytest.raises(ValueError, match="LocalSGDStrategy\\(period=...\\)"):
        hiapi.distribute.Strategy(algorithm="local_sgd")


def test_one_process_local_sgd_is_plain_training():
    strategy = hiapi.distribute.LocalSGDStrategy(period=3)
    x = np.random.default_rng(0).normal(size=(32, 3)).astype("float32")
    histories = []
    for scope in (strategy, None):
        hiapi.utils.set_random_seed(1)
        if scope:
            with scope.scope():
                model = hiapi.Sequential([hiapi.Input(shape=(3,)), hiapi.layers.Dense(1)])
                model.compile(optimizer=hiapi.optimizers.SGD(0.1), loss="mse")
        else:
            model = hiapi.Sequential([hiapi.Input(shape=(3,)), hiapi.layers.Dense(1)])
            model.compile(optimizer=hiapi.optimizers.SGD(0.1), loss="mse")
        histories.append(model.fit(x, x.sum(1), batch_size=8, epochs=2, shuffle=False,
                                   verbose=0).history["loss"])
    np.testing.assert_allclose(histories[0], histories[1], rtol=1e-6)
