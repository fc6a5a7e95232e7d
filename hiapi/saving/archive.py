"""The one file format: a zip holding ``hiapi.json`` (what the file is, architecture, compile
and optimizer configuration) and ``.npy`` arrays, so ``numpy.load`` can read its arrays too.
Zip's per-member CRC32 and central directory catch truncated and corrupted files on load."""
import io
import json
import zipfile

import numpy as np

from hiapi.runtime.atomic import atomic_write
from hiapi.saving.keras_format import keras_file_hint

MANIFEST = "hiapi.json"


def write_archive(path, manifest, arrays):
    """Atomically write ``manifest`` (JSON-able dict) and named ``arrays`` to ``path``."""
    def write(handle):
        with zipfile.ZipFile(handle, "w", compression=zipfile.ZIP_STORED) as archive:
            archive.writestr(MANIFEST, json.dumps(manifest, indent=1))
            for name, array in arrays.items():
                buffer = io.BytesIO()
                np.save(buffer, np.asarray(array), allow_pickle=False)
                archive.writestr(f"{name}.npy", buffer.getvalue())
    atomic_write(path, write)


def read_archive(path, expected_format):
    """The manifest and a dict of arrays; a clear ValueError for anything else."""
    try:
        with zipfile.ZipFile(path) as archive:
            bad = archive.testzip()
            if bad is not None:
                raise ValueError(f"{path}: member {bad!r} is corrupted (CRC mismatch)")
            names = archive.namelist()
            if MANIFEST not in names:
                raise ValueError(f"{path} is a zip file but not a hiapi file (no {MANIFEST})"
                                 + keras_file_hint(names))
            manifest = json.loads(archive.read(MANIFEST))
            arrays = {name[:-4]: np.load(io.BytesIO(archive.read(name)), allow_pickle=False)
                      for name in names if name.endswith(".npy")}
    except FileNotFoundError:
        raise
    except (zipfile.BadZipFile, EOFError, OSError, json.JSONDecodeError) as error:
        raise ValueError(f"{path} is not a complete hiapi file (truncated, corrupted, or another "
                         f"format): {error}") from None
    found = manifest.get("format")
    if found != expected_format:
        raise ValueError(f"{path} holds {found!r}, expected {expected_format!r}"
                         + (" (use load_weights for weights files)"
                            if found == "hiapi.weights" else ""))
    return manifest, arrays
