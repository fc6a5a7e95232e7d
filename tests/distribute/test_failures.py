"""Real ``mpiexec -n 4`` jobs where one rank goes wrong: each must end quickly with a non-zero
exit and a message saying what happened, instead of hanging forever."""
import time

import pytest

from mpi import run_mpi

STALL = "collective stall"


def timed(*args, **kwargs):
    start = time.monotonic()
    result = run_mpi(4, "failures.py", *args, check=False, **kwargs)
    return result, time.monotonic() - start


def test_an_exception_between_two_fits_aborts_the_job_with_its_traceback():
    result, seconds = timed("raise-between-fits", timeout=30)     # hung forever before
    assert result.returncode != 0
    assert "[hiapi rank 1/4] uncaught RuntimeError; aborting the MPI job" in result.stderr
    assert "deliberate failure between fits on rank 1" in result.stderr
    assert "Traceback (most recent call last)" in result.stderr
    assert "finished" not in result.stdout
    assert seconds < 30


def test_a_rank_that_exits_early_is_reported_by_the_stall_inspector():
    """sys.exit on one rank raises no exception to hook: the others' next collective times
    out and names the rank that is gone."""
    result, seconds = timed("exit-between-fits", env={"HIAPI_COLLECTIVE_TIMEOUT": "3"},
                            timeout=50)
    assert result.returncode != 0
    report = result.stderr[result.stderr.index(STALL):]
    assert "Ranks that did not arrive: [1]." in report
    assert "rank 1: did not answer" in report
    assert seconds < 40


def test_a_rank_that_sleeps_in_fit_is_named_after_the_timeout():
    result, seconds = timed("sleep-in-fit", env={"HIAPI_COLLECTIVE_TIMEOUT": "3"}, timeout=50)
    assert result.returncode != 0
    assert "rank 2 sleeping" in result.stdout
    report = result.stderr[result.stderr.index(STALL):]
    assert "HIAPI_COLLECTIVE_TIMEOUT=3 s" in report
    assert "iallreduce of 46 float32" in report            # the gradient bucket's collective
    assert "last train step: epoch 2, batch 3" in report    # the step it stalled at
    assert "Ranks that did not arrive: [2]." in report
    assert "rank 2: has not reached it" in report
    assert 3 < seconds < 40                                 # the rank sleeps for 60 s


@pytest.mark.parametrize("mode, name", [("sleep-outside-fit", "allreduce"),
                                        ("sleep-before-ring", "ring allreduce")])
def test_a_rank_that_sleeps_before_a_plain_allreduce_is_named(mode, name):
    result, seconds = timed(mode, env={"HIAPI_COLLECTIVE_TIMEOUT": "2"}, timeout=50)
    assert result.returncode != 0
    report = result.stderr[result.stderr.index(STALL):]
    assert f"stall: {name} of 1024 float32 (4.0 KB) (collective #" in report
    assert "Ranks that did not arrive: [1]." in report
    assert 2 < seconds < 40


def test_ranks_calling_different_collectives_are_reported():
    result, _ = timed("skip-allreduce", env={"HIAPI_COLLECTIVE_TIMEOUT": "2"}, timeout=50)
    assert result.returncode != 0
    report = result.stderr[result.stderr.index(STALL):]
    assert "called a different collective in its place" in report


@pytest.mark.parametrize("value", ["abc", "-1", "inf"])
def test_a_bad_timeout_is_refused_with_its_name(monkeypatch, value):
    from hiapi import config
    monkeypatch.setenv("HIAPI_COLLECTIVE_TIMEOUT", value)
    with pytest.raises(ValueError, match="HIAPI_COLLECTIVE_TIMEOUT must be a number"):
        config.collective_timeout()


def test_the_timeout_defaults_to_300_s_and_0_switches_it_off(monkeypatch):
    from hiapi import config
    monkeypatch.delenv("HIAPI_COLLECTIVE_TIMEOUT", raising=False)
    assert config.collective_timeout() == 300
    monkeypatch.setenv("HIAPI_COLLECTIVE_TIMEOUT", "0")
    assert config.collective_timeout() is None
    monkeypatch.setenv("HIAPI_COLLECTIVE_TIMEOUT", "2.5")
    assert config.collective_timeout() == 2.5


def test_a_job_aborted_mid_epoch_resumes_with_the_same_weights_and_logs(tmp_path):
    """BackupAndRestore(save_freq=4) on 2 ranks: the job dies at epoch 2, batch 10; the rerun
    resumes at batch 8 and ends with the uninterrupted run's weights, and logs the same
    loss and accuracy for the resumed epoch (every rank's running totals are in the backup)."""
    import json
    import numpy as np
    run_mpi(2, "resume.py", "straight", tmp_path)
    crashed = run_mpi(2, "resume.py", "interrupt", tmp_path, check=False, timeout=120)
    assert crashed.returncode != 0 and "simulated crash" in crashed.stderr
    backup = tmp_path / "backup" / "latest.hiapi"
    import hiapi
    assert hiapi.models.load_model(backup)._saved_extra["step"] == 8
    run_mpi(2, "resume.py", "resume", tmp_path)
    straight = json.load(open(tmp_path / "straight_history.json"))
    resumed = json.load(open(tmp_path / "resume_history.json"))
    assert resumed["epoch"] == [1, 2]
    for key in ("loss", "accuracy"):
        assert resumed[key] == straight[key][1:], key
    first, second = (np.load(tmp_path / f"{m}_weights.npz") for m in ("straight", "resume"))
    for key in first:
        np.testing.assert_array_equal(first[key], second[key])
    assert not backup.exists()
