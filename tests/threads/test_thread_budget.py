"""The thread budget (hiapi.runtime.threads): computed from affinity, cgroup quota and ranks per node,
overridden by HIAPI_NUM_THREADS / set_num_threads, applied to BLAS and numba."""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import hiapi
from hiapi import config
from hiapi.runtime import threads

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
CPUS = len(os.sched_getaffinity(0))


def clean_env(**extra):
    """The environment without thread settings that would decide the budget by themselves."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(
        ("OMP_", "OPENBLAS_", "HIAPI_NUM_THREADS", "NUMBA_NUM_THREADS", "MKL_NUM"))}
    return {**env, **extra}


def run_python(code, env, prefix=()):
    result = subprocess.run([*prefix, sys.executable, "-c", code], capture_output=True,
                            text=True, env=env, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


REPORT = """
import json, numpy, hiapi
from threadpoolctl import threadpool_info
b = hiapi.threads.budget()
print(json.dumps({"threads": b.threads, "source": b.source, "cpus": b.cpus,
    "blas": [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"],
    "no_spin": hiapi.threads.busy_wait_stopped()}))
"""


@pytest.mark.skipif(shutil.which("taskset") is None, reason="needs taskset (util-linux)")
def test_affinity_mask_of_one_cpu_gives_one_thread_everywhere():
    got = run_python(REPORT, clean_env(), prefix=("taskset", "-c", "0"))
    assert got["threads"] == 1 and got["cpus"] == 1 and got["source"] == "affinity"
    assert got["blas"] and set(got["blas"]) == {1}


def test_default_budget_is_every_usable_cpu_and_openblas_stops_spinning():
    got = run_python(REPORT, clean_env())
    assert got["threads"] == CPUS and set(got["blas"]) == {CPUS}
    assert got["no_spin"]        # numpy was imported first: the restart path was taken


def test_hiapi_num_threads_overrides(tmp_path):
    got = run_python(REPORT, clean_env(HIAPI_NUM_THREADS="3"))
    assert got["threads"] == 3 and got["source"] == "HIAPI_NUM_THREADS"
    assert set(got["blas"]) == {3}


def test_bad_hiapi_num_threads_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("HIAPI_NUM_THREADS", "many")
    with pytest.raises(ValueError, match="HIAPI_NUM_THREADS must be a positive integer.*'many'"):
        threads.budget()


def test_set_num_threads_applies_to_blas_and_numba_at_once():
    numba = pytest.importorskip("numba")
    from threadpoolctl import threadpool_info
    try:
        config.set_num_threads(1)
        assert threads.budget().threads == 1
        assert threads.budget().source == "hiapi.config.set_num_threads"
        assert {p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"} == {1}
        hiapi.backends.set_backend("numba")
        assert numba.get_num_threads() == 1
    finally:
        config.set_num_threads(None)
        hiapi.backends.set_backend("numpy")
    assert threads.budget().threads == threads.compute().threads
    assert numba.get_num_threads() == min(threads.compute().threads,
                                          numba.config.NUMBA_NUM_THREADS)
    for bad in (0, -2, 1.5, "two", True):
        with pytest.raises(ValueError, match=r"set_num_threads\(n\) must be a positive"):
            config.set_num_threads(bad)


def test_cgroup_v2_cpu_max_parsing(tmp_path):
    assert threads.parse_cpu_max("max 100000\n") is None
    assert threads.parse_cpu_max("150000 100000\n") == 1.5
    assert threads.parse_cpu_max("50000 100000") == 0.5
    (tmp_path / "cpu.max").write_text("200000 100000\n")
    assert threads.cgroup_cpu_limit(tmp_path) == 2.0
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert threads.cgroup_cpu_limit(tmp_path) is None


def test_cgroup_v1_cfs_quota_parsing(tmp_path):
    folder = tmp_path / "cpu"
    folder.mkdir()
    (folder / "cpu.cfs_quota_us").write_text("-1\n")
    (folder / "cpu.cfs_period_us").write_text("100000\n")
    assert threads.cgroup_cpu_limit(tmp_path) is None
    (folder / "cpu.cfs_quota_us").write_text("300000\n")
    assert threads.cgroup_cpu_limit(tmp_path) == 3.0


def test_cgroup_quota_caps_the_budget(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(threads, "affinity_cpus", lambda: 8)
    monkeypatch.setattr(threads.os, "cpu_count", lambda: 8)
    monkeypatch.setattr(threads, "cgroup_cpu_limit", lambda: 2.5)
    monkeypatch.setattr(threads, "ranks_per_node", lambda: 1)
    assert threads.compute() == threads.Budget(3, 3, 1, "cgroup")
    monkeypatch.setattr(threads, "ranks_per_node", lambda: 2)
    assert threads.compute() == threads.Budget(1, 3, 2, "cgroup / 2 ranks per node")
    monkeypatch.setattr(threads, "ranks_per_node", lambda: 4)
    assert threads.compute().threads == 1          # never below one


def test_ranks_bound_to_their_own_cpus_keep_them(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(threads.os, "cpu_count", lambda: 16)
    monkeypatch.setattr(threads, "cgroup_cpu_limit", lambda: None)
    monkeypatch.setattr(threads, "ranks_per_node", lambda: 4)
    monkeypatch.setattr(threads, "affinity_cpus", lambda: 16)     # unbound: share the node
    assert threads.compute().threads == 4
    monkeypatch.setattr(threads, "affinity_cpus", lambda: 4)      # bound to 4 CPUs each
    assert threads.compute().threads == 4
    monkeypatch.setattr(threads, "affinity_cpus", lambda: 2)      # bound tighter than a share
    assert threads.compute().threads == 2


def test_ranks_per_node_from_launcher_variables_without_importing_mpi(monkeypatch):
    for name in threads.LOCAL_SIZE_VARS + threads.WORLD_SIZE_VARS:
        monkeypatch.delenv(name, raising=False)
    assert threads.ranks_per_node() == 1
    monkeypatch.setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "4")
    assert threads.ranks_per_node() == 4


def test_plain_process_does_not_import_mpi4py():
    code = ("import sys, json, hiapi; hiapi.threads.budget(); "
            "print(json.dumps('mpi4py' in sys.modules))")
    assert run_python(code, clean_env()) is False


def test_two_ranks_on_one_node_share_the_cpus():
    from tests.distribute.mpi import mpiexec_path
    launcher = mpiexec_path()
    if launcher is None:
        pytest.skip("no mpiexec: install the dev extra (mpi4py and the mpich wheel)")
    result = subprocess.run([launcher, "-n", "2", sys.executable, str(HERE / "budget_worker.py")],
                            capture_output=True, text=True, timeout=180, cwd=ROOT,
                            env=clean_env(PYTHONUNBUFFERED="1"))
    assert result.returncode == 0, result.stderr
    ranks = [json.loads(text) for text in re.findall(r"\{[^{}]*\}", result.stdout)]
    assert len(ranks) == 2
    for rank in ranks:
        assert rank["ranks"] == 2 and rank["split_ranks"] == 2
        assert rank["threads"] == max(1, CPUS // 2) and set(rank["blas"]) == {rank["threads"]}


def test_python_m_hiapi_reports_the_budget():
    result = subprocess.run([sys.executable, "-m", "hiapi"], capture_output=True, text=True,
                            env=clean_env(HIAPI_NUM_THREADS="1"), cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "thread budget 1 per pool (HIAPI_NUM_THREADS" in out
    for name in ("hiapi 0.1.0", "Python 3.", "numpy ", "numba ", "mpi4py ", "cupy ", "backend ",
                 "pool blas: openblas", "CPUs: "):
        assert name in out, name


def test_fit_verbose_2_prints_the_budget_once_per_process_until_it_changes(capsys,
                                                                          monkeypatch):
    import numpy as np
    monkeypatch.setattr(threads, "_banner_shown", None)     # as in a fresh process
    model = hiapi.Sequential([hiapi.Input((4,)), hiapi.layers.Dense(2, activation="softmax")])
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    model.fit(np.ones((8, 4)), np.zeros(8), epochs=2, verbose=2)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == threads.banner(hiapi.config.backend()) and "thread budget" in lines[0]
    assert sum("thread budget" in line for line in lines) == 1
    model.fit(np.ones((8, 4)), np.zeros(8), epochs=1, verbose=2)     # a loop of fits: not again
    assert "thread budget" not in capsys.readouterr().out
    hiapi.config.set_num_threads(1)
    try:                                                          # the budget changed: again
        model.fit(np.ones((8, 4)), np.zeros(8), epochs=1, verbose=2)
        assert "thread budget 1 per pool" in capsys.readouterr().out.splitlines()[0]
    finally:
        hiapi.config.set_num_threads(None)


SPIN = """
import json, time, numpy as np
import hiapi
a = np.random.rand(512, 512).astype(np.float32)
burnt = []
for _ in range(3):
    a @ a
    start = time.process_time()
    time.sleep(0.3)                  # OpenBLAS's idle threads would spin ~0.1 s here
    burnt.append(time.process_time() - start)
print(json.dumps({"burnt": burnt, "stopped": hiapi.threads.busy_wait_stopped()}))
"""


@pytest.mark.skipif(CPUS < 2, reason="one CPU: OpenBLAS starts no worker threads")
def test_openblas_threads_sleep_after_a_gemm_even_when_numpy_came_first():
    got = run_python(SPIN, clean_env())
    assert got["stopped"]
    assert min(got["burnt"]) < 0.01, got       # spinning burns ~0.1 s of CPU per GEMM
