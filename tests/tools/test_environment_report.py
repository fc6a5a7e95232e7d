"""``python -m hiapi`` names everything a bug report needs, one line each."""
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_python_m_hiapi_has_every_line(tmp_path):
    env = dict(os.environ, HIAPI_DATA_DIR=str(tmp_path / "data"),
               HIAPI_CACHE_DIR=str(tmp_path / "cache"), HIAPI_BACKEND="numpy")
    result = subprocess.run([sys.executable, "-m", "hiapi"], capture_output=True, text=True,
                            env=env, cwd=tmp_path, timeout=120)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    expected = [r"hiapi \d+\.\d+\.\d+ \(", r"Python 3\.\d+\.\d+ \(", r"numpy \d", r"numba ",
                r"mpi4py ", r"cupy ", r"BLAS used by numpy: \w+ [\d.]+, \d+ thread\(s\)",
                r"backend numpy \(HIAPI_BACKEND=numpy\)", r"CPUs: \d+ on the machine, \d+ in",
                r"thread budget \d+ per pool", r"GPUs: ",
                re.escape(f"data: HIAPI_DATA_DIR {tmp_path / 'data'}, download cache "
                          f"{tmp_path / 'cache' / 'datasets'}")]
    if importlib.util.find_spec("mpi4py") is not None:
        expected.append(r"MPI library: \S+.*\d")       # e.g. "MPICH Version: 5.0.2"
    if importlib.util.find_spec("cupy") is None:
        expected.append(r"GPUs: none visible \(cupy not installed\)$")
    for pattern in expected:
        assert any(re.match(pattern, line) for line in lines), (pattern, lines)


def test_mpi_library_version_in_process_when_mpi_is_loaded():
    """With MPI already running (inside a training script) the version is asked in process;
    it reads the same as the child's answer."""
    if importlib.util.find_spec("mpi4py") is None:
        import pytest
        pytest.skip("mpi4py is not installed")
    from hiapi.__main__ import _mpi_library
    child = _mpi_library()
    code = ("from mpi4py import MPI\nfrom hiapi.__main__ import _mpi_library\n"
            "import subprocess\nsubprocess.run = None     # starting a child would fail\n"
            "print(_mpi_library())")
    here = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=60)
    assert here.returncode == 0, here.stderr
    assert here.stdout.strip() == child and re.search(r"\d", child)


def fake_cupy(count=None, error=None):
    """A stand-in module with cupy's runtime calls, for machines without cupy or a GPU."""
    import types

    def device_count():
        if error is not None:
            raise error
        return count

    runtime = types.SimpleNamespace(
        getDeviceCount=device_count, driverGetVersion=lambda: 13000,
        runtimeGetVersion=lambda: 13020,
        getDeviceProperties=lambda i: {"name": f"GPU{i}".encode(), "totalGlobalMem": 80 * 2**30,
                                       "major": 9, "minor": 0})
    return types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=runtime))


def test_gpu_line_counts_and_names_cupy_devices(monkeypatch):
    import hiapi.__main__ as main
    monkeypatch.setattr(main.importlib.util, "find_spec", lambda name: object())
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy(count=2))
    line = main._gpus()
    assert line.startswith("2 visible (cupy): GPU0 (80 GiB, compute capability 9.0), GPU1 (80 GiB, "
                           "compute capability 9.0); CUDA driver 13.0, runtime 13.2; NCCL ")
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy(count=0))
    assert main._gpus() == "none visible (cupy)"
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy(error=RuntimeError("no CUDA driver")))
    assert main._gpus() == "none visible (cupy: RuntimeError: no CUDA driver)"
