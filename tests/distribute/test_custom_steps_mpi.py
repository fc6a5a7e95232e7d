"""Subclassed models and custom train steps under strategies (real mpiexec). Data parallel:
the tape's gradients are averaged over workers before they are applied, so two ranks train
exactly as one process on the global batch."""
import json
import subprocess
import sys

import numpy as np
import pytest

from mpi import WORKERS, run_mpi


@pytest.mark.parametrize("step", ["builtin", "custom"])
def test_two_ranks_equal_one_process_on_the_global_batch(tmp_path, step):
    run_mpi(2, "custom_step.py", tmp_path, step, "strategy", 2)
    subprocess.run([sys.executable, str(WORKERS / "custom_step.py"), str(tmp_path), step,
                    "reference", "2"], check=True, timeout=180)
    reference = np.load(tmp_path / f"{step}_reference_0.npz")
    expected = json.load(open(tmp_path / f"{step}_reference_0.json"))
    for rank in range(2):
        weights = np.load(tmp_path / f"{step}_strategy_{rank}.npz")
        for name in reference.files:
            np.testing.assert_allclose(weights[name], reference[name], rtol=1e-4, atol=1e-5)
        history = json.load(open(tmp_path / f"{step}_strategy_{rank}.json"))
        for key in ("loss", "accuracy", "val_loss", "val_accuracy"):
            np.testing.assert_allclose(history[key], expected[key], rtol=1e-4)
    assert expected["accuracy"][-1] > expected["accuracy"][0]


def test_tensor_parallel_splits_a_subclassed_model_and_pipelines_say_they_cannot(tmp_path):
    run_mpi(2, "subclassed_parallel.py", tmp_path, "tensor")
    subprocess.run([sys.executable, str(WORKERS / "subclassed_parallel.py"), str(tmp_path),
                    "reference"], check=True, timeout=180)
    np.testing.assert_allclose(json.load(open(tmp_path / "tensor.json")),
                               json.load(open(tmp_path / "reference.json")), rtol=1e-10)
    split, whole = np.load(tmp_path / "tensor.npz"), np.load(tmp_path / "reference.npz")
    for name in whole.files:
        np.testing.assert_allclose(split[name], whole[name], rtol=1e-10, atol=1e-12)
    failed = run_mpi(2, "subclassed_parallel.py", tmp_path, "pipeline", check=False)
    assert failed.returncode != 0
    assert "model 'mlp' is a subclassed MLP (its call() is Python)" in failed.stderr


@pytest.mark.parametrize("style", ["eager", "function"])
def test_a_loop_from_scratch_with_horovods_tape_equals_one_process(tmp_path, style):
    # Horovod's DistributedGradientTape and broadcast_variables: two ranks on half a batch
    # each train as one process on the whole (rank 1 starts from other weights, rank 0's are
    # broadcast), eagerly and inside @hiapi.function
    run_mpi(2, "loop_from_scratch.py", tmp_path, style, "mpi")
    subprocess.run([sys.executable, str(WORKERS / "loop_from_scratch.py"), str(tmp_path), style,
                    "reference"], check=True, timeout=180)
    reference = np.load(tmp_path / f"{style}_reference_0.npz")
    losses = json.load(open(tmp_path / f"{style}_reference_0.json"))
    assert losses[-1] < losses[0]
    for rank in range(2):
        weights = np.load(tmp_path / f"{style}_mpi_{rank}.npz")
        for name in reference.files:
            np.testing.assert_allclose(weights[name], reference[name], rtol=1e-4, atol=1e-5)
    halves = [json.load(open(tmp_path / f"{style}_mpi_{rank}.json")) for rank in range(2)]
    np.testing.assert_allclose(np.mean(halves, axis=0), losses, rtol=1e-4)
