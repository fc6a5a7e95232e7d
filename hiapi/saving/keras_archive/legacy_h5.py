"""Weights from Keras 2's HDF5 files, as Keras 3's ``model.load_weights`` reads them.

Years of Keras checkpoints are ``model.save("m.h5")`` and ``save_weights("w.h5")`` files of
Keras 2 (Keras 3 still writes them with ``save("m.h5")``). Their layout: a group (the file
itself, or its ``model_weights`` group in a whole-model file) whose ``layer_names`` attribute
lists one group per layer, in the model's order; each layer group's ``weight_names``
attribute lists its arrays, trainable weights first, then the others (batch norm's moving
statistics). Long lists are split into ``layer_names0``, ``layer_names1``, ... attributes.

Keras matches them to the model in one of two ways, and so does this:
- by order (the default): the model's layers that have weights, in ``model.layers`` order,
  against the file's layers that have some; the counts must agree;
- by name (``by_name=True``): each file layer goes to the model's layers of that name; the
  others are left as they are.

A layer whose weight count or shapes differ is an error naming both sides, or with
``skip_mismatch=True`` a warning and the layer left as it is, all of it. Every layer is
matched before any weight is assigned, as Keras does, so an error leaves the model as it
was. Only the weights are read: the
architecture in a whole-model file is Keras 2's config format, which ``load_model`` does not
read (build the model in code and call ``load_weights``).
"""
from __future__ import annotations

import warnings

import numpy as np


def is_legacy(file) -> bool:
    """Whether an open HDF5 file has Keras 2's layout (rather than Keras 3's
    ``.weights.h5``, whose layers sit under ``layers/``)."""
    return bool(_attribute(_weights_group(file), "layer_names"))


def load(file, model, filepath, by_name=False, skip_mismatch=False) -> None:
    group = _weights_group(file)
    saved = [(name, _values(group[name])) for name in _attribute(group, "layer_names")]
    if "top_level_model_weights" in group and \
            _attribute(group["top_level_model_weights"], "weight_names"):
        raise ValueError(f"load_weights: {filepath} holds weights of the model itself (not of "
                         f"a layer), which hiapi's models do not have")
    match = _match_by_name if by_name else _match_in_order
    for variable, value in match(saved, model, filepath, skip_mismatch):
        variable.assign(value.astype(variable.dtype, copy=False))


def refuse_options(filepath, layout, by_name, skip_mismatch):
    """``by_name`` and ``skip_mismatch`` are for Keras 2's files: given for a file of another
    ``layout`` (matched layer by layer, or by the layers' paths), an error."""
    if by_name is not None or skip_mismatch:
        raise ValueError(f"load_weights: by_name and skip_mismatch are read for Keras 2's "
                         f"'.h5' files; {filepath} is {layout}")


def _match_in_order(saved, model, filepath, skip_mismatch):
    """(variable, value) pairs: the file's layers with weights against the model's, in order."""
    saved = [(name, values) for name, values in saved if values]
    layers = [layer for layer in model.layers if _legacy_weights(layer)]
    if len(saved) != len(layers):
        raise ValueError(
            f"load_weights: {filepath} holds weights for {len(saved)} layers "
            f"({', '.join(name for name, _ in saved)}), model {model.name!r} has "
            f"{len(layers)} layers with weights "
            f"({', '.join(layer.name for layer in layers)}); load with by_name=True to match "
            f"layers by name instead of by order")
    pairs = []
    for index, ((name, values), layer) in enumerate(zip(saved, layers)):
        pairs += _pairs(layer, values, f"layer #{index} ({layer.name!r} in the model, "
                                       f"{name!r} in {filepath})", skip_mismatch)
    return pairs


def _match_by_name(saved, model, filepath, skip_mismatch):
    """(variable, value) pairs: each file layer against the model's layers of its name."""
    by_name = {}
    for layer in model.layers:
        by_name.setdefault(layer.name, []).append(layer)
    return [pair for name, values in saved for layer in by_name.get(name, [])
            for pair in _pairs(layer, values, f"layer {name!r} of {filepath}", skip_mismatch)]


def _pairs(layer, values, where, skip_mismatch):
    """The layer's (variable, value) pairs, or none when a count or a shape differs (an
    error, or with ``skip_mismatch`` a warning: the layer is left whole as it is)."""
    variables = _legacy_weights(layer)
    if len(values) != len(variables):
        _mismatch(f"{where} holds {len(values)} weights, the layer has {len(variables)}",
                  skip_mismatch)
        return []
    for variable, value in zip(variables, values):
        if tuple(value.shape) != tuple(variable.shape):
            _mismatch(f"{where}: weight {variable.name!r} has shape {tuple(variable.shape)}, "
                      f"the file holds shape {tuple(value.shape)}", skip_mismatch)
            return []
    return list(zip(variables, values))


def _mismatch(what, skip_mismatch):
    """A weight or layer that does not fit: an error, or with ``skip_mismatch`` a warning
    (and the weights left as they are)."""
    if not skip_mismatch:
        raise ValueError(f"load_weights: {what}")
    warnings.warn(f"load_weights: {what}; skipped (skip_mismatch=True)", stacklevel=5)


def _legacy_weights(layer):
    """A layer's weights in the order Keras 2 wrote them: trainable first."""
    return layer.trainable_weights + layer.non_trainable_weights


def _weights_group(file):
    return file["model_weights"] if "model_weights" in file else file


def _values(group):
    return [np.asarray(group[name]) for name in _attribute(group, "weight_names")]


def _attribute(group, name):
    """A list attribute, whole or in the numbered chunks Keras splits long ones into."""
    if name in group.attrs:
        items = list(group.attrs[name])
    else:
        items, chunk = [], 0
        while f"{name}{chunk}" in group.attrs:
            items += list(group.attrs[f"{name}{chunk}"])
            chunk += 1
    return [item.decode("utf8") if hasattr(item, "decode") else str(item) for item in items]
