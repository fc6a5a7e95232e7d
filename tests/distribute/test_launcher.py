"""``python -m hiapi.run`` (issue #31) for real: mpiexec found by itself, output prefixed by
rank, a failure summary naming the first failing rank, restarts that resume from
BackupAndRestore to the uninterrupted run's weights bit for bit, and a repeating failure
that stops the restarts."""
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from mpi import ROOT, WORKERS, interruptible, mpiexec_path

pytestmark = pytest.mark.skipif(mpiexec_path() is None, reason="no mpiexec (the mpi extra)")


def launch(*args, timeout=240):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    env.pop("HIAPI_NUM_THREADS", None)
    return subprocess.run([sys.executable, "-m", "hiapi.run", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout, env=env)


def weights(path):
    saved = np.load(path)
    return [saved[key] for key in sorted(saved, key=lambda k: int(k.split("_")[1]))]


@pytest.mark.parametrize("ranks", [2, 4])
def test_a_rank_killed_mid_epoch_is_restarted_to_the_same_weights(tmp_path, ranks):
    straight = launch("-n", ranks, WORKERS / "restart_train.py", tmp_path, "straight")
    assert straight.returncode == 0, straight.stderr[-3000:]
    killed = launch("-n", ranks, "--max-restarts", 2, WORKERS / "restart_train.py", tmp_path,
                    "killed")
    assert killed.returncode == 0, killed.stderr[-3000:]
    assert f"first failure: rank {ranks - 1} was killed by SIGKILL" in killed.stderr
    assert "the job finished after 1 restart(s)" in killed.stderr
    assert "[rank 0] finished" in killed.stdout
    for a, b in zip(weights(tmp_path / "straight_weights.npz"),
                    weights(tmp_path / "killed_weights.npz")):
        np.testing.assert_array_equal(a, b)


def test_a_repeating_failure_stops_the_restarts_with_its_traceback(tmp_path):
    result = launch("-n", 2, "--max-restarts", 5, WORKERS / "restart_train.py", tmp_path,
                    "repeating")
    assert result.returncode != 0
    # read from the record rank 1 writes before its abort (HIAPI_RUN_DIR), which the abort
    # cannot cut short as it can the output on a loaded machine
    assert result.stderr.count("first failure: rank 1 raised ValueError: the same bad batch "
                               "every time at epoch 2, batch 5") == 2
    assert "File " in result.stderr and "on_train_batch_begin" in result.stderr  # traceback
    assert "the same failure as in the attempt before" in result.stderr
    assert "attempt 3" not in result.stderr


def test_only_rank_0_output_and_the_thread_budget(tmp_path):
    script = tmp_path / "show.py"
    script.write_text("import os\nprint('rank', os.environ['PMI_RANK'], 'threads',\n"
                      "      os.environ['HIAPI_NUM_THREADS'])\n")
    result = launch("-n", 2, "--output", "rank0", "--threads", 3, script)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["rank 0 threads 3"]
    every = launch("-n", 2, script)
    assert sorted(every.stdout.splitlines()) == [
        f"[rank {r}] rank {r} threads {max(1, len(os.sched_getaffinity(0)) // 2)}"
        for r in range(2)]


def test_ctrl_c_stops_every_rank_and_the_launcher_without_a_restart(tmp_path):
    script = tmp_path / "sleepy.py"
    script.write_text("import os, time\nprint('pid', os.getpid(), flush=True)\ntime.sleep(120)\n")
    process = subprocess.Popen([sys.executable, "-m", "hiapi.run", "-n", "2", "--max-restarts",
                                "3", str(script)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, cwd=ROOT,
                               start_new_session=True, preexec_fn=interruptible)
    pids = []
    while len(pids) < 2:
        line = process.stdout.readline()
        assert line, process.stderr.read()
        pids += [int(line.split()[-1])] if " pid " in line else []
    os.killpg(process.pid, signal.SIGINT)              # a terminal's Ctrl-C: the whole group
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130 and "interrupted: the ranks were stopped" in err
    assert "restarting" not in err
    time.sleep(0.5)
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
