"""Finding a dataset's files: an explicit folder, ``HIAPI_DATA_DIR``, the copy bundled with
hiapi, the user cache, or (last) a download from the canonical mirror, checked against the
published sha256 and written atomically into the cache."""
import hashlib
import os
import tempfile
import urllib.request
from pathlib import Path

from hiapi import config

BUNDLED = Path(__file__).parent / "data"


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def candidate_folders(name, path=None, bundled=True):
    """Where ``name``'s files are looked for, in order."""
    folders = []
    if path is not None:
        folders.append(Path(path).expanduser())
    data_dir = config.data_dir()
    if data_dir is not None:
        folders += [data_dir / name, data_dir]
    if bundled:
        folders.append(BUNDLED / name)
    folders.append(config.cache_dir() / "datasets" / name)
    return folders


def locate(name, files, mirror, path=None, bundled=True):
    """Paths of ``files`` (a dict filename -> sha256), from the first folder holding them all,
    else downloaded from ``mirror`` into the cache."""
    folders = candidate_folders(name, path, bundled)
    for folder in folders:
        if all((folder / f).is_file() for f in files):
            return [folder / f for f in files]
    cache = config.cache_dir() / "datasets" / name
    try:
        return [download(mirror + f, cache / f, digest) for f, digest in files.items()]
    except (OSError, ValueError) as error:
        looked = "\n  ".join(str(f) for f in folders)
        raise FileNotFoundError(
            f"{name}: the files {sorted(files)} were not found in:\n  {looked}\nand the "
            f"download from {mirror} failed ({error}). Put the IDX .gz files in a folder and "
            f"set HIAPI_DATA_DIR to it, or pass path=") from None


def download(url, target, expected_sha256):
    """Fetch ``url`` to ``target`` atomically; a checksum mismatch leaves nothing behind."""
    target = Path(target)
    if target.is_file() and sha256(target) == expected_sha256:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle, urllib.request.urlopen(url, timeout=60) as response:
            while block := response.read(1 << 20):
                handle.write(block)
            handle.flush()
            os.fsync(handle.fileno())
        got = sha256(temporary)
        if got != expected_sha256:
            raise ValueError(f"{url}: sha256 {got} does not match the published "
                             f"{expected_sha256}")
        os.replace(temporary, target)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    return target
