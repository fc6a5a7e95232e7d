"""Real ``mpiexec -n 2`` and ``-n 4`` (oversubscribed on 2 cores) runs: collectives against
numpy, N-rank training equal to one process on the global batch, identical logs on all ranks,
compressed training, and failures that end the job instead of hanging it."""
import json
import re
from pathlib import Path

import numpy as np
import pytest

import hiapi
from hiapi import layers

from mpi import run_mpi


@pytest.mark.parametrize("ranks", [2, 4])
def test_allreduce_allgather_bcast_agree_with_numpy(ranks):
    result = run_mpi(ranks, "collectives.py")
    assert result.stdout.count(": ok") == ranks


def single_process_weights(global_batch, optimizer):
    """The same model and data trained in this process with the global batch."""
    hiapi.utils.set_random_seed(11)
    (x, y), _ = hiapi.datasets.mnist.load_data()
    x, y = x[:1000] / 255.0, y[:1000]
    model = hiapi.Sequential([hiapi.Input(shape=(28, 28)), layers.Flatten(),
                              layers.Dense(32, activation="relu"),
                              layers.Dense(10, activation="softmax")])
    model.compile(optimizer=optimizer, loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    history = model.fit(x, y, batch_size=global_batch, epochs=2, validation_split=0.2,
                        verbose=0)
    return model.get_weights(), history.history


@pytest.mark.parametrize("ranks, optimizer", [(2, "sgd"), (4, "adam")])
def test_n_ranks_equal_one_process_with_the_global_batch(tmp_path, ranks, optimizer):
    run_mpi(ranks, "train.py", tmp_path, "none", "--optimizer", optimizer)
    reference, history = single_process_weights(
        25 * ranks, hiapi.optimizers.Adam(0.003) if optimizer == "adam"
        else hiapi.optimizers.SGD(0.1, momentum=0.9))
    logs = [json.load(open(tmp_path / f"history_{r}.json")) for r in range(ranks)]
    for rank in range(ranks):
        weights = np.load(tmp_path / f"weights_{rank}.npz")
        for i, expected in enumerate(reference):
            np.testing.assert_allclose(weights[f"arr_{i}"], expected, rtol=1e-4, atol=1e-5)
        assert logs[rank]["history"] == logs[0]["history"]     # every rank reports the same
    for key in ("loss", "accuracy", "val_loss", "val_accuracy"):
        np.testing.assert_allclose(logs[0]["history"][key], history[key], rtol=1e-4)


@pytest.mark.parametrize("compression", ["dgc", "topk", "fp16", "onebit", "qsgd"])
def test_compressed_training_runs_and_reports_bytes(tmp_path, compression):
    run_mpi(2, "train.py", tmp_path, compression)
    logs = [json.load(open(tmp_path / f"history_{r}.json")) for r in range(2)]
    assert logs[0]["history"] == logs[1]["history"]
    assert np.isfinite(logs[0]["history"]["loss"]).all()
    assert logs[0]["ratio"] > {"fp16": 1.9, "topk": 9, "dgc": 40, "onebit": 25,
                               "qsgd": 3.9}[compression]
    first, second = (np.load(tmp_path / f"weights_{r}.npz") for r in range(2))
    for key in first:                                  # workers stay in lockstep
        np.testing.assert_array_equal(first[key], second[key])


def test_a_failing_rank_ends_the_job_with_its_traceback(tmp_path):
    result = run_mpi(4, "train.py", tmp_path, "none", "--fail-rank", "1", check=False,
                     timeout=120)
    assert result.returncode != 0
    assert "[hiapi rank 1/4] fit failed" in result.stderr
    assert "deliberate failure on rank 1" in result.stderr


def test_mismatched_models_are_detected_at_start(tmp_path):
    result = run_mpi(2, "train.py", tmp_path, "none", "--mismatch", check=False, timeout=120)
    assert result.returncode != 0
    assert "built a different model than rank 0" in result.stderr


def test_mismatched_models_with_buckets_in_shared_memory_are_named(tmp_path):
    """With ``zero_copy`` the buckets are allocated (collectively) while the train step is
    built, before fit compares the models: ranks asking for different sizes must all say so,
    not fail on one rank inside numpy (or hang)."""
    result = run_mpi(2, "train.py", tmp_path, "none", "--mismatch", "--algorithm", "zero_copy",
                     check=False, timeout=120)
    assert result.returncode != 0
    for rank in range(2):
        assert f"[hiapi rank {rank}/2] fit failed" in result.stderr
    assert re.search(r"asked for different sizes \(rank 0: [\d,]+ bytes, rank 1: [\d,]+ "
                     r"bytes\).*every rank must build the same model", result.stderr)


@pytest.mark.parametrize("compression", ["none", "dgc"])
def test_distributed_example(compression):
    example = Path(__file__).resolve().parents[2] / "examples" / "distributed_mnist.py"
    result = run_mpi(2, example, "--epochs", "1", "--train-samples", "2000", "--compression",
                     compression, "--verbose", "0")
    assert result.stdout.count("test accuracy") == 1          # rank 0 only
    accuracy = float(result.stdout.split("test accuracy ")[1].split(",")[0])
    assert accuracy > (0.75 if compression == "none" else 0.5)


def test_metrics_sum_over_ranks_host_side_metrics_included(tmp_path):
    """Built-in metrics (statistics in the step) and a Keras-style Metric subclass (updated on
    the host) report the whole data set's values on every rank."""
    run_mpi(2, "metric_logs.py", tmp_path)
    import sys
    sys.path.insert(0, str(Path(__file__).parent / "workers"))
    from metric_logs import data, model
    x, y = data()
    error = model().predict(x, verbose=0)[:, 0] - y
    expected = {"loss": np.mean(error ** 2), "mae": np.mean(np.abs(error)),
                "root_mean_squared_error": np.sqrt(np.mean(error ** 2)),
                "label_sum": float(np.sum(y))}
    for rank in range(2):
        logs = json.loads((tmp_path / f"metrics_{rank}.json").read_text())
        assert logs.keys() == expected.keys()
        for key, value in expected.items():
            assert logs[key] == pytest.approx(value, rel=1e-5, abs=1e-5), (rank, key)
