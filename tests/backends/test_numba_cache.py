"""numba's on-disk cache works across processes and MPI ranks: a second process, or each rank of
an ``mpiexec -n 2`` job, loads the compiled loops instead of compiling them again (a cold
compile of the MNIST convnet's kernels takes 30 s to minutes on 2 cores)."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("numba")
WORKER = Path(__file__).with_name("numba_cache_worker.py")
ROOT = Path(__file__).resolve().parents[2]


def test_second_process_and_mpi_ranks_load_from_the_cache(tmp_path):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba"),   # a cold cache
           "HIAPI_CACHE_DIR": str(tmp_path / "hiapi"), "PYTHONUNBUFFERED": "1"}

    def run(*prefix):
        done = subprocess.run([*prefix, sys.executable, str(WORKER)], capture_output=True,
                              text=True, env=env, cwd=ROOT, timeout=600)
        assert done.returncode == 0, done.stderr
        return [json.loads(t) for t in re.findall(r"\{[^{}]*\}", done.stdout)]

    (cold,) = run()
    assert cold["misses"] > 0 and cold["hits"] == 0
    assert list((tmp_path / "hiapi" / "numba").glob("fused_*.py"))     # generated sources
    (warm,) = run()
    assert warm["misses"] == 0 and warm["hits"] == cold["misses"]
    from tests.distribute.mpi import mpiexec_path
    if mpiexec_path() is None:
        pytest.skip("no mpiexec: install the dev extra (mpi4py and the mpich wheel)")
    ranks = run(mpiexec_path(), "-n", "2")
    assert len(ranks) == 2 and all(r["misses"] == 0 and r["hits"] == cold["misses"]
                                   for r in ranks)
