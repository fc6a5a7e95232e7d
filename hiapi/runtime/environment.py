"""Every ``HIAPI_*`` environment variable is read here, and only here.

Reading configuration in one place means a user can find every knob by reading one file, and a
test can change a setting by patching the environment before calling these functions. This is
the runtime floor (it imports nothing of hiapi), so kernels and the graph compiler may read it;
users reach these functions as ``hiapi.config``, which re-exports them.
"""
import os
from pathlib import Path


def backend_name() -> str:
    """Backend chosen by ``HIAPI_BACKEND`` (default ``numpy``)."""
    return os.environ.get("HIAPI_BACKEND", "numpy").strip().lower() or "numpy"


def data_dir() -> Path | None:
    """Folder named by ``HIAPI_DATA_DIR`` holding dataset files, or None when unset."""
    value = os.environ.get("HIAPI_DATA_DIR")
    return Path(value).expanduser() if value else None


def cache_dir() -> Path:
    """User cache for downloaded datasets: ``HIAPI_CACHE_DIR`` or ``~/.hiapi``."""
    return Path(os.environ.get("HIAPI_CACHE_DIR", "~/.hiapi")).expanduser()


_passes_override = None


def set_passes(names):
    """Choose the graph passes in code (a list of pass names, "all" or "none"); None goes
    back to ``HIAPI_PASSES``. Functions compiled afterwards use the choice."""
    global _passes_override
    _passes_override = names


def passes(all_names):
    """Enabled pass names: ``HIAPI_PASSES`` is "all" (default), "none", a comma-separated list,
    or a list of "-name" entries switching single passes off."""
    value = _passes_override if _passes_override is not None else \
        os.environ.get("HIAPI_PASSES", "all")
    if not isinstance(value, str):
        names = set(value)
    else:
        value = value.strip().lower()
        items = [v.strip() for v in value.split(",") if v.strip()]
        if value in ("", "all"):
            names = set(all_names)
        elif value == "none":
            names = set()
        elif all(v.startswith("-") for v in items):
            names = set(all_names) - {v[1:] for v in items}
        else:
            names = set(items)
    unknown = names - set(all_names)
    if unknown:
        raise ValueError(f"unknown graph pass(es) {sorted(unknown)} in HIAPI_PASSES / "
                         f"set_passes: valid passes are {', '.join(all_names)}")
    return names


def memory():
    """Memory planning for compiled graphs: ``HIAPI_MEMORY`` is "plan" (default: one arena,
    buffers reused, in place) or "none" (every value its own buffer)."""
    value = os.environ.get("HIAPI_MEMORY", "plan").strip().lower() or "plan"
    if value not in ("plan", "none"):
        raise ValueError(f"HIAPI_MEMORY must be 'plan' or 'none', got {value!r}")
    return value


def winograd():
    """Whether 3x3 stride-1 convolutions may run as Winograd F(2x2, 3x3)
    (``hiapi/backends/winograd.py``): ``HIAPI_WINOGRAD`` is "1" (default) or "0" (im2col +
    GEMM for every convolution: direct convolution's float32 rounding, at its speed)."""
    return _switch("HIAPI_WINOGRAD", "1")


def cuda_graphs():
    """Whether the cupy backend records a compiled step as a CUDA graph and replays it
    (``hiapi/backends/cupy_backend/step_graphs.py``): ``HIAPI_CUDA_GRAPHS`` is "1" (default)
    or "0" (every kernel launched from Python at every call, as before)."""
    return _switch("HIAPI_CUDA_GRAPHS", "1")


def _switch(name, default):
    """An on/off environment variable: "1" or "0" (``default`` when unset or empty)."""
    value = os.environ.get(name, default).strip() or default
    if value not in ("0", "1"):
        raise ValueError(f"{name} must be '1' or '0', got {value!r}")
    return value == "1"


def prefetch():
    """Whether ``fit`` gathers the next shuffled batch on a helper thread while the step runs
    (``hiapi/models/prefetch.py``): ``HIAPI_PREFETCH`` is "1" or "0"; None when unset, and
    then it runs where the helper can run at idle priority (Linux), so that it only takes
    cores the step leaves idle (at normal priority it made whole epochs 3-9 % slower on this
    project's 2-core machine; at idle priority 4-8 % faster)."""
    if not os.environ.get("HIAPI_PREFETCH", "").strip():
        return None
    return _switch("HIAPI_PREFETCH", "0")


def spin_seconds():
    """How long a kernel's helper thread keeps spinning (on ``sched_yield``) after its last job
    before it sleeps (``hiapi/backends/numba_backend/spin_workers.py``): ``HIAPI_SPIN_US``,
    microseconds, default 300; 0 makes helpers sleep at once (each job then wakes them)."""
    value = os.environ.get("HIAPI_SPIN_US", "").strip() or "300"
    if not value.isdigit():
        raise ValueError(f"HIAPI_SPIN_US must be a whole number of microseconds >= 0, "
                         f"got {value!r}")
    return int(value) / 1e6


def num_threads():
    """Threads per pool chosen by ``HIAPI_NUM_THREADS`` (a positive integer), or None when
    unset (``hiapi.runtime.threads`` then computes the budget)."""
    value = os.environ.get("HIAPI_NUM_THREADS", "").strip()
    return positive_threads("HIAPI_NUM_THREADS", value) if value else None


def positive_threads(name, value):
    """``value`` as a number of threads per pool, or a ValueError naming ``name``."""
    number = int(value) if str(value).strip().isdigit() and not isinstance(value, bool) else 0
    if number < 1:
        raise ValueError(f"{name} must be a positive integer (threads per pool), got {value!r}")
    return number


def collective_timeout() -> float | None:
    """Seconds a distributed collective may wait for the other ranks before the job is
    aborted with a report of which ranks did not arrive: ``HIAPI_COLLECTIVE_TIMEOUT``
    (default 300; ``0`` or ``none`` switches the stall inspector off, giving None)."""
    value = os.environ.get("HIAPI_COLLECTIVE_TIMEOUT", "300").strip().lower()
    if value in ("", "none", "off"):
        return None
    try:
        seconds = float(value)
    except ValueError:
        seconds = float("nan")
    if not seconds >= 0 or seconds == float("inf"):
        raise ValueError(f"HIAPI_COLLECTIVE_TIMEOUT must be a number of seconds >= 0 (0 or "
                         f"'none' to switch the stall inspector off), got {value!r}")
    return seconds or None


def timeline_path() -> str | None:
    """File that ``fit`` writes a Chrome trace of training to (``HIAPI_TIMELINE``, as
    Horovod's ``HOROVOD_TIMELINE``; see ``hiapi.callbacks.Timeline``), or None when unset."""
    return os.environ.get("HIAPI_TIMELINE", "").strip() or None


def ranks_per_node() -> int | None:
    """Ranks to group into one pretend node for the hierarchical allreduce:
    ``HIAPI_RANKS_PER_NODE`` (a positive integer; unset means the real nodes, found by MPI)."""
    value = os.environ.get("HIAPI_RANKS_PER_NODE", "").strip()
    if not value:
        return None
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"HIAPI_RANKS_PER_NODE must be a positive integer (ranks per pretend "
                         f"node), got {value!r}")
    return int(value)

