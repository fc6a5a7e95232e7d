"""Finding a dataset's files, so that training works offline whenever a copy exists anywhere.

A dataset is looked for in this order, and the first *folder holding all of its files* wins
(files are never mixed from several places):

1. the ``path`` argument of ``load_data`` (a folder holding the files);
2. ``HIAPI_DATA_DIR`` (``hiapi.config.data_dir()``): first its ``<name>/`` subfolder, then the
   folder itself. MNIST and Fashion-MNIST use the same file names, so a folder holding several
   datasets must use the subfolders;
3. the copy bundled inside the package, ``hiapi/datasets/data/<name>/`` (MNIST only);
4. the user cache, ``hiapi.config.cache_dir() / "datasets" / <name>``;
5. a download from the dataset's mirror into that cache.

Downloads are checked against the published sha256 and written atomically (a temporary file in
the cache folder, fsync, ``os.replace``), so an interrupted or tampered download never leaves a
file that a later run would trust. Files found in steps 1-4 are not hashed: the cache only ever
receives verified files, the bundled copy is checked by the tests, and a folder named by the
user is the user's choice.
"""
import hashlib
import os
import sys
import tempfile
from pathlib import Path

from hiapi.runtime import environment

#: folder holding the copies shipped inside the package, one subfolder per dataset
BUNDLED_DIR = Path(__file__).parent / "data"


def sha256(path) -> str:
    """Hex sha256 of the file ``path``, read in blocks (the files are tens of MB)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def cache_folder(name) -> Path:
    """Where downloads of dataset ``name`` are kept."""
    return environment.cache_dir() / "datasets" / name


def candidate_folders(name, path=None, bundled_dir=BUNDLED_DIR):
    """``(description, folder)`` pairs, in the order they are searched for ``name``'s files.

    ``bundled_dir`` is the folder holding the package's bundled copies (one subfolder per
    dataset), or None for a dataset that is not bundled.
    """
    folders = []
    if path is not None:
        folders.append(("path argument", Path(path).expanduser()))
    data_dir = environment.data_dir()
    if data_dir is not None:
        folders.append((f"HIAPI_DATA_DIR/{name}", data_dir / name))
        folders.append(("HIAPI_DATA_DIR", data_dir))
    if bundled_dir is not None:
        folders.append(("bundled with hiapi", Path(bundled_dir) / name))
    folders.append(("user cache", cache_folder(name)))
    return folders


def locate(name, files, mirror, path=None, bundled_dir=BUNDLED_DIR):
    """Paths of dataset ``name``'s ``files``, in the order of ``files``.

    ``files`` maps each file name to its published sha256. ``mirror`` is the base URL the
    files are downloaded from when no searched folder holds them all (``file://`` URLs work
    too, which is how the tests exercise this path). See ``candidate_folders`` for ``path``
    and ``bundled_dir``.

    Raises ``FileNotFoundError`` listing every place searched and how to fix it when the files
    are nowhere and the download fails (including a sha256 mismatch).
    """
    folders = candidate_folders(name, path, bundled_dir)
    for _, folder in folders:
        if all((folder / f).is_file() for f in files):
            return [folder / f for f in files]

    cache = cache_folder(name)
    mirror = mirror if mirror.endswith("/") else mirror + "/"
    try:
        return [download(mirror + f, cache / f, digest) for f, digest in files.items()]
    except (OSError, ValueError) as error:
        raise FileNotFoundError(_not_found_message(name, files, folders, mirror, error)) \
            from error


def _not_found_message(name, files, folders, mirror, error):
    lines = [f"{name}: no folder holds all of {', '.join(files)}, and downloading them failed.",
             "Looked in, in this order:"]
    for description, folder in folders:
        if not folder.is_dir():
            state = "does not exist"
        else:
            state = "missing " + ", ".join(f for f in files if not (folder / f).is_file())
        lines.append(f"  {description}: {folder} ({state})")
    if environment.data_dir() is None:
        lines.append("  HIAPI_DATA_DIR: not set")
    lines.append(f"  download from {mirror}: {error}")
    lines.append(f"To fix: put the {len(files)} .gz files in a folder and set HIAPI_DATA_DIR to "
                 f"it (or to a folder holding it as '{name}/'), or pass path=<folder> to "
                 f"load_data().")
    return "\n".join(lines)


def download(url, target, expected_sha256) -> Path:
    """Fetch ``url`` to ``target`` unless a verified copy is already there.

    The bytes go to a temporary file next to ``target`` (same file system, so the final
    ``os.replace`` is atomic), are fsynced and checked against ``expected_sha256``; only then is
    the file renamed into place. On any failure the temporary file is removed, so neither a
    partial nor a tampered file is left behind. A mismatch raises ``ValueError``.
    """
    import urllib.request   # imported here: only a download needs it

    target = Path(target)
    if target.is_file() and sha256(target) == expected_sha256:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    print(f"hiapi: downloading {url} -> {target}", file=sys.stderr)
    fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part",
                                     dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            with urllib.request.urlopen(url, timeout=60) as response:
                while block := response.read(1 << 20):
                    handle.write(block)
            handle.flush()
            os.fsync(handle.fileno())
        got = sha256(temporary)
        if got != expected_sha256:
            raise ValueError(f"{url}: sha256 {got} does not match the published "
                             f"{expected_sha256}; the file was discarded")
        os.replace(temporary, target)
        _fsync_folder(target.parent)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    return target


def _fsync_folder(folder):
    """Make the rename durable too; not possible everywhere (Windows), hence best effort."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
