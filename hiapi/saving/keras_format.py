"""Keras's legacy HDF5 file names on hiapi files.

``"model.keras"`` and ``"x.weights.h5"`` get Keras 3's real formats (``keras_archive``). Keras 2's
whole-model ``.h5``/``.hdf5`` files are not written: hiapi writes its own format under such a
name (``load_model`` reads it back), but says once per call site that Keras cannot read the
file, rather than silently writing an ``.h5`` file that is not one.
"""
import os
import warnings

KERAS_SUFFIXES = (".h5", ".hdf5")


def warn_if_keras_name(filepath, what):
    name = os.fspath(filepath)
    if name.lower().endswith(KERAS_SUFFIXES):
        warnings.warn(
            f"{what}({name!r}): hiapi writes its own format (a zip of hiapi.json and .npy "
            f"arrays), not Keras's legacy {os.path.splitext(name)[1]} format: "
            f"hiapi.models.load_model and load_weights read it back, Keras cannot. Save to a "
            f"'.keras' (or, for weights, '.weights.h5') path for Keras 3's format, or to a "
            f"'.hiapi' path for hiapi's, to silence this warning.", UserWarning, stacklevel=4)


def keras_file_hint(names):
    """Why a zip without hiapi's manifest was refused, when it looks like a Keras file."""
    if "config.json" in names and any(n.endswith(".h5") for n in names):
        return " (this is a Keras .keras file: read it with hiapi.models.load_model)"
    return ""
