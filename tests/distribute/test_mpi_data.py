"""Data sources under real ``mpiexec -n 2`` and ``-n 4`` (oversubscribed on 2 cores): a
PyDataset and per-rank generators train exactly like one process on the global batch, and
workers holding different amounts of data fail fast on every rank with each rank's count
instead of hanging."""
import json
import time

import numpy as np
import pytest

import hiapi
from hiapi import layers

from mpi import run_mpi


def one_process(ranks, shuffle=False):
    """The worker's model and data trained here on global batches of 25 * ranks samples."""
    rng = np.random.default_rng(7)
    y = rng.integers(0, 4, 400)
    x = (rng.normal(size=(400, 10)) + y[:, None] * 0.5).astype(np.float32)
    hiapi.utils.set_random_seed(3)
    model = hiapi.Sequential([hiapi.Input(shape=(10,)), layers.Dense(16, activation="relu"),
                              layers.Dense(4, activation="softmax")])
    model.compile(optimizer=hiapi.optimizers.SGD(0.1, momentum=0.9),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    history = model.fit(x, y, batch_size=25 * ranks, epochs=2, shuffle=shuffle, verbose=0)
    return model.get_weights(), history.history, model.evaluate(x, y, verbose=0)


@pytest.mark.parametrize("ranks, mode", [(2, "pydataset"), (4, "pydataset"),
                                         (2, "generator"), (2, "batch-shuffle"),
                                         (4, "batch-shuffle"), (2, "threads"),
                                         (2, "processes")])
def test_batch_sources_train_like_one_process_on_the_global_batch(tmp_path, ranks, mode):
    """``batch-shuffle``: fit(shuffle="batch") reorders the same global chunks as one process
    on the global batch does (the same seed), each rank taking its part of every chunk.
    ``threads``/``processes``: the PyDataset read by each rank's own parallel workers."""
    script = "pydataset_workers.py" if mode in ("threads", "processes") else "data_sources.py"
    run_mpi(ranks, script, tmp_path, mode)
    weights, history, evaluation = one_process(ranks, "batch" if mode == "batch-shuffle"
                                               else False)
    logs = [json.load(open(tmp_path / f"history_{r}.json")) for r in range(ranks)]
    for rank in range(ranks):
        saved = np.load(tmp_path / f"weights_{rank}.npz")
        for i, expected in enumerate(weights):
            np.testing.assert_allclose(saved[f"arr_{i}"], expected, rtol=1e-5, atol=1e-6)
        assert logs[rank] == logs[0]                       # every rank reports the same
    np.testing.assert_allclose(logs[0]["history"]["loss"], history["loss"], rtol=1e-5)
    np.testing.assert_allclose(logs[0]["evaluate"], evaluation, rtol=1e-5)


@pytest.mark.parametrize("ranks", [2, 4])
@pytest.mark.parametrize("mode", ["counts", "same-steps"])
def test_different_sample_counts_fail_fast_naming_every_rank(tmp_path, ranks, mode):
    start = time.monotonic()
    result = run_mpi(ranks, "data_sources.py", tmp_path, mode, check=False, timeout=60)
    elapsed = time.monotonic() - start
    assert result.returncode != 0
    step = 7 if mode == "counts" else 1
    counts = ", ".join(f"rank {r}: {400 - step * r}" for r in range(ranks))
    assert f"ValueError: fit: the workers have different amounts of data (samples: " \
           f"{counts})" in result.stderr, (result.returncode, result.stdout[-2000:],
                                           result.stderr[-2000:])
    assert elapsed < 30, elapsed


def test_a_generator_running_out_on_one_rank_fails_on_every_rank(tmp_path):
    result = run_mpi(2, "data_sources.py", tmp_path, "short-generator", check=False,
                     timeout=60)
    assert result.returncode != 0
    assert "fit: at step 7 rank(s) [0] have a batch but rank(s) [1] ran out of data" in \
        result.stderr, (result.returncode, result.stdout[-2000:], result.stderr[-2000:])


def test_a_growing_batch_under_a_strategy_grows_the_global_batch(tmp_path):
    """2 ranks, per-worker batch 10 then 20: one process with 20 then 40."""
    from hiapi.callbacks import BatchSizeScheduler
    run_mpi(2, "batch_growth.py", tmp_path)
    rng = np.random.default_rng(7)
    y = rng.integers(0, 3, 240)
    x = (rng.normal(size=(240, 6)) + y[:, None]).astype(np.float32)
    hiapi.utils.set_random_seed(3)
    model = hiapi.Sequential([hiapi.Input(shape=(6,)), layers.Dense(8, activation="relu"),
                              layers.Dense(3, activation="softmax")])
    model.compile(optimizer=hiapi.optimizers.SGD(0.1, momentum=0.9),
                  loss="sparse_categorical_crossentropy")
    model.fit(x, y, batch_size=20, epochs=2, shuffle=False, verbose=0,
              callbacks=[BatchSizeScheduler.instead_of_decay(20, boundaries=[1], factor=2)])
    saved = np.load(tmp_path / "weights.npz")
    for i, expected in enumerate(model.get_weights()):
        np.testing.assert_allclose(saved[f"arr_{i}"], expected, rtol=1e-5, atol=1e-6)
