"""Writing files so that a crash never leaves a half-written one in place.

The data goes to a temporary file in the target's folder, is flushed and fsynced, and only then
renamed over the target (``os.replace`` is atomic on POSIX); the folder is fsynced so the rename
itself survives a power cut. Killed at any moment, the target holds either the old complete file
or the new complete file.

A process killed mid-write (``kill -9``, out of memory) cannot delete its temporary file, so
temporaries are named ``.{target}.tmp-{host}-{pid}-{n}``: the next save to the same target
deletes those whose process is gone (same host, pid no longer running), and a person can tell
what they are. The file is created with mode 0o666 filtered by the umask, exactly what a plain
``open(path, "wb")`` gives (``tempfile.mkstemp`` would give 0o600 and the rename would keep it).
"""
import itertools
import os
import socket
from pathlib import Path

_HOST = socket.gethostname().replace("/", "_") or "localhost"
_counter = itertools.count()


def temporary_name(path):
    """The name this process gives its next temporary file for ``path``."""
    return f".{path.name}.tmp-{_HOST}-{os.getpid()}-{next(_counter)}"


def _owner(name, target_name):
    """(host, pid) of a temporary file written for ``target_name``, or None if ``name`` is not
    one of ours."""
    prefix = f".{target_name}.tmp-"
    if not name.startswith(prefix):
        return None
    parts = name[len(prefix):].rsplit("-", 2)
    if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit():
        return None
    return parts[0], int(parts[1])


def _process_exists(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:          # alive, owned by another user
        return True
    return True


def remove_stale_temporaries(path):
    """Delete temporaries for ``path`` left by dead processes of this host; returns their
    names. Files of live processes (a concurrent save) and of other hosts are left alone."""
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    removed = []
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return removed
    for name in names:
        owner = _owner(name, path.name)
        if owner is None or owner[0] != _HOST or owner[1] == os.getpid() or \
                _process_exists(owner[1]):
            continue
        try:
            os.unlink(folder / name)
            removed.append(name)
        except FileNotFoundError:    # another process cleaned it first
            pass
    return removed


def atomic_write(path, write):
    """Call ``write(binary_file)`` and atomically install the result at ``path``."""
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    folder.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path)
    temporary = folder / temporary_name(path)
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)   # umask applies
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
