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
