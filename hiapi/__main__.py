"""``python -m hiapi``: the environment report to paste into a bug report.

It names what decides speed and correctness on this machine: versions (the MPI library too), the
backend, the BLAS (threadpoolctl's view of every native pool), the thread budget and the rule
that chose it, the CPUs and GPUs visible, and where datasets are looked for.
"""
import importlib.util
from importlib import metadata
import os
import platform
import subprocess
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


def _mpi_library():
    """MPI.Get_library_version() in a child process with MPI initialisation switched off:
    the standard allows the call before MPI_Init, and a child cannot hang or initialise this
    process's MPI (under a launcher whose PMI server is gone, MPI_Init can wait forever)."""
    if "mpi4py.MPI" in sys.modules:         # already loaded here: asking costs nothing
        return " ".join(sys.modules["mpi4py.MPI"].Get_library_version().split("\n")[0].split())
    code = ("import mpi4py; mpi4py.rc.initialize = mpi4py.rc.finalize = False\n"
            "from mpi4py import MPI; print(MPI.Get_library_version().strip().splitlines()[0])")
    try:
        child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                               timeout=30)
    except subprocess.TimeoutExpired:
        return "unknown (asking took over 30 s)"
    if child.returncode != 0:
        return "unavailable: " + (child.stderr.strip().splitlines() or ["no message"])[-1]
    return " ".join(child.stdout.split())


def _gpus():
    """GPUs cupy sees, with the driver, the CUDA runtime and NCCL; cupy is imported only if
    installed (it starts the CUDA runtime)."""
    if importlib.util.find_spec("cupy") is None:
        return "none visible (cupy not installed)"
    try:
        import cupy
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as error:      # no driver, no device: cupy raises its own CUDA errors
        return f"none visible (cupy: {type(error).__name__}: {error})"
    if not count:
        return "none visible (cupy)"
    names = []
    for index in range(count):
        properties = cupy.cuda.runtime.getDeviceProperties(index)
        name = properties["name"]
        name = name.decode() if isinstance(name, bytes) else str(name)
        names.append(f"{name} ({properties['totalGlobalMem'] / 2**30:.0f} GiB, compute "
                     f"capability {properties['major']}.{properties['minor']})")
    return (f"{count} visible (cupy): " + ", ".join(names) +
            f"; CUDA driver {_cuda_version(cupy.cuda.runtime.driverGetVersion())}, runtime "
            f"{_cuda_version(cupy.cuda.runtime.runtimeGetVersion())}; NCCL {_nccl(cupy)}")


def _cuda_version(number):
    """CUDA's integer version (12080) as people write it (12.8)."""
    return f"{number // 1000}.{number % 1000 // 10}"


def _nccl(cupy):
    """NCCL's version as cupy loaded it, or why it is not there."""
    try:
        from cupy.cuda import nccl
    except ImportError as error:
        return f"unavailable ({error})"
    if not nccl.available:
        return "not found by cupy (pip install nvidia-nccl-cu12 or -cu13, as the CUDA major)"
    version = nccl.get_version()            # 22303 is 2.23.3
    return f"{version // 10000}.{version % 10000 // 100}.{version % 100}"


def _blas(pools):
    """The BLAS numpy calls (threadpoolctl's 'blas' pools) and its thread count."""
    blas = [f"{p.get('internal_api')} {p.get('version')}, {p.get('num_threads')} thread(s)"
            for p in pools if p.get("user_api") == "blas"]
    return "; ".join(blas) or "none found by threadpoolctl (numpy's reference BLAS?)"


def report():
    """The report as a list of lines."""
    import hiapi
    from threadpoolctl import threadpool_info

    budget = hiapi.threads.apply()
    lines = [f"hiapi {hiapi.__version__} ({os.path.dirname(hiapi.__file__)})",
             f"Python {platform.python_version()} ({sys.executable}) on {platform.platform()}"]
    lines += [f"{names[0]} {_version(*names)}" for names in (
        ("numpy",), ("numba",), ("mpi4py",),
        ("cupy", "cupy-cuda13x", "cupy-cuda12x", "cupy-cuda11x"))]
    if importlib.util.find_spec("mpi4py") is not None:
        lines.append(f"MPI library: {_mpi_library()}")
    pools = threadpool_info()
    lines.append(f"BLAS used by numpy: {_blas(pools)}")
    try:
        backend = hiapi.backends.get_backend().name
    except ImportError as error:
        backend = f"unavailable: {error}"
    lines.append(f"backend {backend} (HIAPI_BACKEND={os.environ.get('HIAPI_BACKEND', 'unset')})")
    lines.append(f"CPUs: {os.cpu_count()} on the machine, {hiapi.threads.affinity_cpus()} in "
                 f"this process's affinity mask, cgroup quota "
                 f"{hiapi.threads.cgroup_cpu_limit() or 'none'}")
    lines.append(budget.describe())
    lines.append("thread tuner: " + (
        f"on (each step times itself with 1 to {budget.threads} threads and keeps the fastest)"
        if hiapi.threads.adaptive() else
        "off (count fixed by the user, MPI ranks, or one CPU)"))
    lines.append("OpenBLAS idle threads: " + ("sleep after each call" if
                 hiapi.threads.busy_wait_stopped() else "as configured by the BLAS "
                 f"(OPENBLAS_THREAD_TIMEOUT={os.environ.get('OPENBLAS_THREAD_TIMEOUT', 'unset')})"))
    lines.append(f"GPUs: {_gpus()}")
    lines.append(f"data: HIAPI_DATA_DIR {hiapi.config.data_dir() or 'unset'}, download cache "
                 f"{hiapi.config.cache_dir() / 'datasets'} (HIAPI_CACHE_DIR)")
    for pool in pools:
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
    try:
        print("\n".join(report()), flush=True)
    except BrokenPipeError:             # `python -m hiapi | head`: the reader left, not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
