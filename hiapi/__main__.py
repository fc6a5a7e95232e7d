"""``python -m hiapi``: the environment report to paste into a bug report.

It names what decides speed and correctness on this machine: versions, the backend, the BLAS
(threadpoolctl's view of every native pool), the thread budget and the rule that chose it.
"""
from importlib import metadata
import os
import platform
import sys


def _version(*distributions):
    """Installed version, read from package metadata so that nothing is imported (importing
    numba or cupy here would start their runtimes)."""
    for name in distributions:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return "not installed"


def report():
    """The report as a list of lines."""
    import hiapi
    from threadpoolctl import threadpool_info

    budget = hiapi.threads.apply()
    lines = [f"hiapi {hiapi.__version__} ({os.path.dirname(hiapi.__file__)})",
             f"Python {platform.python_version()} ({sys.executable}) on {platform.platform()}"]
    lines += [f"{names[0]} {_version(*names)}" for names in (
        ("numpy",), ("numba",), ("mpi4py",), ("cupy", "cupy-cuda12x", "cupy-cuda11x"))]
    try:
        backend = hiapi.backends.get_backend().name
    except ImportError as error:
        backend = f"unavailable: {error}"
    lines.append(f"backend {backend} (HIAPI_BACKEND={os.environ.get('HIAPI_BACKEND', 'unset')})")
    lines.append(f"CPUs: {os.cpu_count()} on the machine, {hiapi.threads.affinity_cpus()} in "
                 f"this process's affinity mask, cgroup quota "
                 f"{hiapi.threads.cgroup_cpu_limit() or 'none'}")
    lines.append(budget.describe())
    lines.append("fit's thread tuner: " + (
        f"on (fit times steps with 1 to {budget.threads} threads and keeps the fastest)"
        if hiapi.threads.adaptive() else
        "off (count fixed by the user, MPI ranks, one CPU, or a seeded run)"))
    lines.append("OpenBLAS idle threads: " + ("sleep after each call" if
                 hiapi.threads.busy_wait_stopped() else "as configured by the BLAS "
                 f"(OPENBLAS_THREAD_TIMEOUT={os.environ.get('OPENBLAS_THREAD_TIMEOUT', 'unset')})"))
    for pool in threadpool_info():
        lines.append(f"pool {pool.get('user_api')}: {pool.get('internal_api')} "
                     f"{pool.get('version')} {pool.get('threading_layer', '')}, "
                     f"{pool.get('num_threads')} thread(s), {pool.get('filepath')}")
    if "numba" in sys.modules:
        import numba
        lines.append(f"numba threads {numba.get_num_threads()} of {numba.config.NUMBA_NUM_THREADS}"
                     f", threading layer {numba.config.THREADING_LAYER}")
    settings = sorted(f"{k}={v}" for k, v in os.environ.items() if k.startswith(
        ("HIAPI_", "OMP_", "OPENBLAS_", "MKL_", "NUMBA_", "PMI_SIZE", "MPI_LOCALNRANKS"))
        and not (k == "OPENBLAS_THREAD_TIMEOUT" and not hiapi.threads.USER_TIMEOUT))
    lines.append("environment: " + (" ".join(settings) or "no HIAPI_/OMP_/BLAS/NUMBA_ settings"))
    return lines


if __name__ == "__main__":
    print("\n".join(report()))
