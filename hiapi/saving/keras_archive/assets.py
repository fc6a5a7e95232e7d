"""Assets: the files a layer's ``save_assets(folder)`` writes (a vocabulary, a lookup table),
kept in the ``.keras`` archive under ``assets/<the layer's path>/`` as Keras keeps them, and
handed back to ``load_assets(folder)`` from a temporary folder when the model is loaded.

The hooks run before the archive is opened for writing, so a hook that fails leaves no file
behind (the archive itself is written atomically)."""
import os
import tempfile

from hiapi.saving.keras_archive.attribute_walk import walk

ASSETS = "assets"


def collect(model):
    """``{archive name: bytes}`` of every file the model's layers' ``save_assets`` write."""
    files = {}
    with tempfile.TemporaryDirectory() as root:
        for path, layer in walk(model):
            if hasattr(layer, "save_assets"):
                folder = os.path.join(root, path)
                os.makedirs(folder, exist_ok=True)
                layer.save_assets(folder)
        for directory, _, names in os.walk(root):
            for name in names:
                full = os.path.join(directory, name)
                relative = os.path.relpath(full, root).replace(os.sep, "/")
                with open(full, "rb") as handle:
                    files[f"{ASSETS}/{relative}"] = handle.read()
    return files


def members(archive):
    """The archive's assets, ``{archive name: bytes}``."""
    return {name: archive.read(name) for name in archive.namelist()
            if name.startswith(f"{ASSETS}/") and not name.endswith("/")}


def restore(model, files, filepath):
    """Write ``files`` (from ``members``) to a temporary folder and call each layer's
    ``load_assets`` with its own folder in it (made empty when the archive has none)."""
    with tempfile.TemporaryDirectory() as root:
        real_root = os.path.realpath(root)
        for name, data in files.items():
            target = os.path.realpath(os.path.join(root, name[len(ASSETS) + 1:]))
            if not target.startswith(real_root + os.sep):
                raise ValueError(f"{filepath}: asset {name!r} points outside the model's "
                                 f"assets folder; refusing to load it")
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "wb") as handle:
                handle.write(data)
        for path, layer in walk(model):
            if hasattr(layer, "load_assets"):
                folder = os.path.join(root, path)
                os.makedirs(folder, exist_ok=True)
                layer.load_assets(folder)
