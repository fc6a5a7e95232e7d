"""The thread budget: how many threads each hiapi process runs, and applying it to every pool.

Why: BLAS (OpenBLAS), numba and any OpenMP runtime each start one thread per core by default.
With other processes on the cores, or several MPI ranks on one node, those pools oversubscribe
the machine; a GEMM split over two threads then waits for whichever thread was descheduled, and
OpenBLAS's idle threads spin for ~0.1 s after every call, taking the CPU from the numba loop that
follows. Measured on 2 cores: two ranks' MLP steps took 150 ms each with default threads and
32 ms with one thread per rank.

The budget is the CPUs this process may run on (``os.sched_getaffinity``, capped by a cgroup CPU
quota in containers) divided by the MPI ranks on this node, at least 1. A user's choice wins:
``hiapi.config.set_num_threads(n)``, then ``HIAPI_NUM_THREADS``, then ``OMP_NUM_THREADS``
(``NUMBA_NUM_THREADS`` still sets numba's pool alone, below the first two).

    import hiapi
    hiapi.threads.budget()        # Budget(threads=2, cpus=2, source='affinity', ...)
                                  # (this module, hiapi.runtime.threads)
    hiapi.config.set_num_threads(1)

``apply()`` runs when hiapi is imported (about 1 ms) and again when the numba backend loads.
"""
import contextlib
import ctypes
import functools
import math
import os
import sys
from pathlib import Path
from typing import NamedTuple

from hiapi.runtime import environment

CGROUP_ROOT = Path("/sys/fs/cgroup")

# Launchers' variables for the number of ranks on this node, and for the world size.
LOCAL_SIZE_VARS = ("MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE", "MV2_COMM_WORLD_LOCAL_SIZE",
                   "PMIX_LOCAL_SIZE")
WORLD_SIZE_VARS = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE", "PMIX_SIZE")


OVERRIDES = ("hiapi.config.set_num_threads", "HIAPI_NUM_THREADS")


class Budget(NamedTuple):
    """``threads`` per pool; ``cpus`` usable by this process; ``ranks_per_node`` sharing them;
    ``source`` says which rule decided (override, HIAPI_NUM_THREADS, OMP_NUM_THREADS,
    affinity, cgroup, ranks per node)."""
    threads: int
    cpus: int
    ranks_per_node: int
    source: str

    def describe(self):
        return (f"thread budget {self.threads} per pool ({self.source}; {self.cpus} usable "
                f"CPU(s), {self.ranks_per_node} rank(s) on this node)")


def parse_cpu_max(text):
    """CPUs allowed by a cgroup v2 ``cpu.max`` ("quota period" or "max period"), or None."""
    fields = text.split()
    if not fields or fields[0] == "max":
        return None
    period = int(fields[1]) if len(fields) > 1 else 100000
    return int(fields[0]) / period if period > 0 else None


def parse_cfs(quota_text, period_text):
    """CPUs allowed by cgroup v1 ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us`` (-1: none)."""
    quota, period = int(quota_text.strip()), int(period_text.strip())
    return quota / period if quota > 0 and period > 0 else None


def _own_cgroup_paths(root):
    """Candidate cgroup folders for this process, its own first, then the mount root."""
    paths = []
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            if controllers in ("", "cpu", "cpu,cpuacct", "cpuacct,cpu"):
                sub = controllers.replace("cpuacct,cpu", "cpu,cpuacct")
                for base in ([root] if controllers == "" else [root / sub, root / "cpu"]):
                    paths.append(base / path.lstrip("/"))
    except (OSError, ValueError):
        pass
    return paths + [root, root / "cpu", root / "cpu,cpuacct"]


def cgroup_cpu_limit(root=CGROUP_ROOT):
    """The tightest cgroup CPU quota (v2 ``cpu.max`` or v1 CFS) over this process's cgroup and
    the root, in CPUs (may be fractional), or None when there is none."""
    limits = []
    for folder in _own_cgroup_paths(Path(root)):
        try:
            if (folder / "cpu.max").is_file():
                limits.append(parse_cpu_max((folder / "cpu.max").read_text()))
            elif (folder / "cpu.cfs_quota_us").is_file():
                limits.append(parse_cfs((folder / "cpu.cfs_quota_us").read_text(),
                                        (folder / "cpu.cfs_period_us").read_text()))
        except (OSError, ValueError):
            continue
    limits = [limit for limit in limits if limit]
    return min(limits) if limits else None


def affinity_cpus():
    """CPUs this process may run on (its affinity mask; ``os.cpu_count()`` where there is none)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def ranks_per_node():
    """MPI ranks on this node: the launcher's variables when it sets them; otherwise, under an
    MPI launch of more than one rank, a shared-memory split of COMM_WORLD. A plain process
    imports no MPI."""
    for name in LOCAL_SIZE_VARS:
        if os.environ.get(name, "").isdigit():
            return max(1, int(os.environ[name]))
    world = next((int(os.environ[n]) for n in WORLD_SIZE_VARS
                  if os.environ.get(n, "").isdigit()), 1)
    if world <= 1 and "mpi4py.MPI" not in sys.modules:
        return 1
    try:
        from mpi4py import MPI
    except ImportError:
        return 1
    if MPI.COMM_WORLD.Get_size() <= 1:
        return 1
    node = MPI.COMM_WORLD.Split_type(MPI.COMM_TYPE_SHARED)
    size = node.Get_size()
    node.Free()
    return size


def compute():
    """The budget from the machine and the environment, ignoring any override. Ranks share the
    node's CPUs (or the container's quota); a rank the launcher bound to fewer CPUs than its
    share keeps its own."""
    cpus, source = affinity_cpus(), "affinity"
    node = os.cpu_count() or cpus
    quota = cgroup_cpu_limit()
    if quota is not None:
        limit = max(1, math.ceil(quota))
        node = min(node, limit)
        if limit < cpus:
            cpus, source = limit, "cgroup"
    ranks = ranks_per_node()
    threads = cpus
    if ranks > 1:
        threads = max(1, min(cpus, node // ranks))
        source += f" / {ranks} ranks per node"
    omp = os.environ.get("OMP_NUM_THREADS", "").strip()
    if omp.isdigit() and int(omp) > 0:
        threads, source = int(omp), "OMP_NUM_THREADS"
    return Budget(threads, cpus, ranks, source)


_computed = None
_override = None


def set_num_threads(n):
    """Threads per pool (BLAS, numba, hiapi's own) for this process, overriding the computed
    thread budget and ``HIAPI_NUM_THREADS``; None goes back to them. Applied at once::

        hiapi.config.set_num_threads(1)    # e.g. several jobs sharing this machine
    """
    global _override
    if n is not None:
        n = environment.positive_threads("set_num_threads(n)", n)
    _override = n
    apply()


def num_threads_override():
    """(threads, source) chosen by ``set_num_threads`` or ``HIAPI_NUM_THREADS``, or
    (None, None) when the thread budget decides."""
    if _override is not None:
        return _override, OVERRIDES[0]
    chosen = environment.num_threads()
    return (chosen, OVERRIDES[1]) if chosen is not None else (None, None)


_loaders = 0       # PyDataset worker threads or processes running now (loader_workers)


def budget():
    """The budget in force: ``set_num_threads``, ``HIAPI_NUM_THREADS``, else computed;
    less the data-loading workers running now (``loader_workers``)."""
    global _computed
    if _computed is None:
        _computed = compute()
    chosen, source = num_threads_override()
    held = _computed if chosen is None else _computed._replace(threads=chosen, source=source)
    return held._replace(threads=max(1, held.threads - _loaders)) if _loaders else held


@contextlib.contextmanager
def loader_workers(n):
    """While ``n`` data-loading workers run (``PyDataset(workers=n)``), the step's pools give
    up ``n`` threads (at least one is left): a worker decoding a batch takes a core, and a
    pool sized for every core would wait for the one the worker holds (see the
    oversubscription figures above)."""
    global _loaders
    _loaders += n
    try:
        apply()
        yield
    finally:
        _loaders -= n
        apply()


def num_threads():
    """Threads hiapi's own parallel code may use (the budget)."""
    return budget().threads


def _openblas_libs(controller):
    return [lib for lib in controller.lib_controllers
            if lib.internal_api == "openblas" and lib.threading_layer == "pthreads"]


# The user's own setting is kept; otherwise, before numpy has loaded OpenBLAS, the environment
# is enough (no restart needed).
USER_TIMEOUT = "OPENBLAS_THREAD_TIMEOUT" in os.environ
if not USER_TIMEOUT:
    os.environ["OPENBLAS_THREAD_TIMEOUT"] = "4"


def _stop_openblas_spinning(lib):
    """Make OpenBLAS's idle threads sleep right after each call instead of spinning ~0.1 s.

    OpenBLAS reads ``OPENBLAS_THREAD_TIMEOUT`` only when it starts its threads, normally when
    numpy is imported, before hiapi can set anything. Its own fork handler restarts the threads
    (shutdown, init); doing the same after re-reading the environment applies the shortest
    timeout (2^4 cycles; 0.4 ms). Returns True when the idle threads now sleep."""
    if USER_TIMEOUT:
        return False
    try:
        handle = ctypes.CDLL(lib.filepath)
        steps = handle.openblas_read_env, handle.blas_thread_shutdown_, handle.blas_thread_init
        timeout = handle.openblas_thread_timeout
    except (OSError, AttributeError):    # another BLAS build without these symbols
        return False
    if timeout() != 4:
        for step in steps:
            step()
    return timeout() == 4


_applied = {}


def apply():
    """Size BLAS/OpenMP pools (threadpoolctl) and numba's threads to the budget and stop
    OpenBLAS's busy-waiting. Cheap when nothing changed (no scan of the loaded libraries), so
    callers may call it freely. Returns the budget."""
    chosen = budget()
    if _applied.get("threads") != chosen.threads or ("numba" in sys.modules) != \
            ("numba" in _applied):
        from threadpoolctl import ThreadpoolController
        _applied["controller"] = controller = ThreadpoolController()   # libraries loaded now
        for lib in _openblas_libs(controller):
            _applied["no_spin"] = _stop_openblas_spinning(lib)
        _applied["threads"] = chosen.threads
        _applied.pop("active", None)
    use(chosen.threads)
    return chosen


def use(n):
    """Run the pools with ``n`` threads from now on (at most the budget is what callers pass);
    the thread tuner switches with this, so it costs microseconds when the libraries are known."""
    if _loaders:                     # the tuner's candidates were sized without the workers
        n = max(1, min(n, budget().threads))
    if _applied.get("active") == n:
        return
    if "controller" not in _applied:
        apply()
    _applied["controller"].limit(limits=n, user_api="blas")
    _applied["controller"].limit(limits=n, user_api="openmp")
    if "numba" in sys.modules:
        import numba
        wanted = n
        if "NUMBA_NUM_THREADS" in os.environ and budget().source not in OVERRIDES:
            wanted = numba.config.NUMBA_NUM_THREADS     # the user's numba-only choice
        numba.set_num_threads(max(1, min(wanted, numba.config.NUMBA_NUM_THREADS)))
        _applied["numba"] = wanted
    _applied["active"] = n


def active_threads():
    """Threads the pools run with now (the budget, or fewer while the steps adapt to the load)."""
    return _applied.get("active") or budget().threads     # budget() only when not applied


def adaptive():
    """Whether the steps may run fewer threads than the budget when that is faster (see
    ``hiapi.runtime.thread_tuner``): for a budget hiapi chose, in a single process. Seeded runs too:
    a matrix product whose bits would follow the thread count runs on one thread in the blocks
    of ``k`` BLAS's threaded driver sums, or is cut along ``k`` or in bands fixed by its shape
    (``backends/gemm_bands.py``), so the thread count changes no bit of the weights."""
    chosen = budget()
    if chosen.threads <= 1 or chosen.source in OVERRIDES + ("OMP_NUM_THREADS",):
        return False
    return chosen.ranks_per_node <= 1 and not launched_with_ranks()


@functools.lru_cache(maxsize=None)
def launched_with_ranks():
    """Whether an MPI launcher started this process as one of several ranks. Read once: the
    launcher sets its variables before the process starts, and ``fit``/``evaluate``/``predict``
    ask at every call (four environment reads were 3 us of a one-batch ``predict``'s 80)."""
    return any(os.environ.get(n, "1") not in ("", "1", "0") for n in WORLD_SIZE_VARS)


def busy_wait_stopped():
    """Whether OpenBLAS's idle threads sleep right after each call (False: they spin, or the
    BLAS is not OpenBLAS with pthreads, or the user set OPENBLAS_THREAD_TIMEOUT)."""
    return _applied.get("no_spin", False)


def banner(backend_name):
    """The line ``fit(verbose=2)`` prints once: the backend (named by the caller: this floor
    knows no backend) and the thread budget."""
    chosen = apply()
    adapting = f"; steps adapt 1-{chosen.threads} to the load" if adaptive() else ""
    return f"hiapi: {backend_name} backend, {chosen.describe()}{adapting}"


_banner_shown = None        # the last banner ``new_banner`` returned in this process


def new_banner(backend_name):
    """``banner``, or None when it is the one this process showed last: a loop of
    ``fit(verbose=2)`` calls (a schedule, a notebook) prints it at the first and again only
    when the backend or the budget changed. Keras prints no such line; one is worth it, since
    the thread budget sets the speed, but not one per call."""
    global _banner_shown
    line = banner(backend_name)
    if line == _banner_shown:
        return None
    _banner_shown = line
    return line
