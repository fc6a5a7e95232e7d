"""Every ``HIAPI_*`` environment variable is read here, and only here.

Reading configuration in one place means a user can find every knob by reading one file, and a
test can change a setting by patching the environment before calling these functions.
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
