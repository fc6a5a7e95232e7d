"""Keras file names on hiapi files.

Keras 3 scripts save to ``"model.keras"`` and ``"x.weights.h5"`` (its ModelCheckpoint insists
on those names), so refusing them would break every ported script. hiapi writes its own format
under whatever name it is given (``load_model`` reads it back), but says once per call site that
Keras cannot read the file, rather than silently writing a ``.keras`` file that is not one.
"""
import os
import warnings

KERAS_SUFFIXES = (".keras", ".h5", ".hdf5")


def warn_if_keras_name(filepath, what):
    name = os.fspath(filepath)
    if name.lower().endswith(KERAS_SUFFIXES):
        warnings.warn(
            f"{what}({name!r}): hiapi writes its own format (a zip of hiapi.json and .npy "
            f"arrays), not Keras's {os.path.splitext(name)[1]} format: hiapi.models.load_model "
            f"and load_weights read it back, Keras cannot. Save to a '.hiapi' path to say so "
            f"and silence this warning.", UserWarning, stacklevel=4)


def keras_file_hint(names):
    """Why a zip without hiapi's manifest was refused, when it looks like a Keras file."""
    if "config.json" in names and any(n.endswith(".h5") for n in names):
        return " (this is a Keras .keras file; hiapi reads only files written by hiapi)"
    return ""
