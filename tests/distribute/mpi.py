"""Running a worker script under a real ``mpiexec`` from pytest, with a timeout."""
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

WORKERS = Path(__file__).parent / "workers"
ROOT = Path(__file__).resolve().parents[2]


def mpiexec_path():
    """The launcher next to this Python (the ``mpich`` wheel's), else one on PATH."""
    beside = Path(sys.executable).parent / "mpiexec"
    return str(beside) if beside.exists() else shutil.which("mpiexec")


def interruptible():
    """``preexec_fn`` of a child a test interrupts with SIGINT: Ctrl-C's default action back,
    whatever the test process inherited (a shell starts a background job, ``pytest &``, with
    SIGINT ignored, and a child inherits that)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_mpi(ranks, worker, *args, timeout=180, check=True, env=None):
    launcher = mpiexec_path()
    if launcher is None:
        pytest.skip("no mpiexec: install the dev extra (mpi4py and the mpich wheel)")
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1", **(env or {})}
    result = subprocess.run([launcher, "-n", str(ranks), sys.executable,
                             str(WORKERS / worker), *map(str, args)],  # worker: name or path
                            capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env)
    if check and result.returncode != 0:
        raise AssertionError(f"mpiexec -n {ranks} {worker} exited {result.returncode}\n"
                             f"stdout:\n{result.stdout[-3000:]}\nstderr:\n{result.stderr[-3000:]}")
    return result
