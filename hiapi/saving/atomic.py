"""Writing files so that a crash never leaves a half-written one in place.

The data goes to a temporary file in the target's folder, is flushed and fsynced, and only then
renamed over the target (``os.replace`` is atomic on POSIX); the folder is fsynced so the rename
itself survives a power cut. Killed at any moment, the target holds either the old complete file
or the new complete file.
"""
import os
import tempfile
from pathlib import Path


def atomic_write(path, write):
    """Call ``write(binary_file)`` and atomically install the result at ``path``."""
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    folder.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
    folder_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(folder_fd)
    finally:
        os.close(folder_fd)
