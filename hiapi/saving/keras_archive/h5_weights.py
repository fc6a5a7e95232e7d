"""Weights in Keras 3's HDF5 layout (``model.weights.h5`` inside a ``.keras`` archive, and the
``*.weights.h5`` file of ``save_weights``).

Keras addresses an object by the path it walks to reach it, not by its name (names are made up
at run time and differ between two builds of one model): a model's layers are the container
``layers``, each named after its class in snake case, numbered in the order of ``model.layers``
(``layers/dense``, ``layers/dense_1``, ...), and each object's variables are datasets ``0``,
``1``, ... of its ``vars`` group, whose ``name`` attribute holds the layer's name. A recurrent
layer keeps its variables in its ``cell``, a wrapper in its sublayers (``forward_layer``,
``backward_layer``, ``layer``), attention in the dense sublayers Keras builds for it
(``query_dense``, ...); a compiled model's optimizer in ``optimizer/vars``.
"""
import re

import numpy as np

from hiapi.saving.keras_archive.layer_config import SUBLAYER_WEIGHTS, WRAPPED, WRAPPED_LISTS

RECURRENT = {"LSTM": "lstm_cell", "GRU": "gru_cell", "SimpleRNN": "simple_rnn_cell"}


def require_h5py():
    """h5py, or an ImportError naming the extra that installs it."""
    try:
        import h5py
    except ImportError as error:
        raise ImportError(f"Keras-format files (.keras, .weights.h5) need h5py: pip install "
                          f"'hiapi[keras-format]' ({error})") from None
    return h5py


def keras_snake_case(class_name):
    """Keras's ``naming.to_snake_case``, which names the groups of ``model.weights.h5``."""
    name = re.sub(r"\W+", "", class_name)
    name = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", name).lower()


def group_names(class_names):
    """Keras's container names for objects of these classes, in order: dense, dense_1, ..."""
    used, names = {}, []
    for class_name in class_names:
        base = keras_snake_case(class_name)
        if base in used:
            used[base] += 1
            names.append(f"{base}_{used[base]}")
        else:
            used[base] = 0
            names.append(base)
    return names


def variables_path(layer_path, class_name):
    """Where a layer of ``class_name`` keeps its variables."""
    return f"{layer_path}/cell/vars" if class_name in RECURRENT else f"{layer_path}/vars"


def write_vars(file, path, name, arrays):
    write_store(file, path, name, {str(index): array for index, array in enumerate(arrays)})


def write_store(file, path, name, store):
    """A ``vars`` group with one dataset per key of ``store`` (arrays or Variables)."""
    group = file.require_group(path)
    group.attrs["name"] = name
    for key, value in store.items():
        group.create_dataset(str(key), data=np.asarray(
            value.numpy() if hasattr(value, "numpy") else value))


def write_layer(file, layer, layer_path):
    class_name = type(layer).__name__
    wrapped = WRAPPED.get(class_name, {})
    if class_name in RECURRENT or wrapped or class_name in WRAPPED_LISTS:
        write_vars(file, f"{layer_path}/vars", layer.name, [])
    if class_name in WRAPPED_LISTS:
        for sublayer, path in _listed_sublayers(layer, layer_path):
            write_layer(file, sublayer, path)
    elif class_name in RECURRENT:
        write_vars(file, variables_path(layer_path, class_name), RECURRENT[class_name],
                   [v.numpy() for v in layer.weights])
    elif wrapped:
        for attribute in wrapped.values():
            write_layer(file, getattr(layer, attribute), f"{layer_path}/{attribute}")
    elif class_name in SUBLAYER_WEIGHTS:
        write_vars(file, f"{layer_path}/vars", layer.name, [])
        for (group, name), chunk in _sublayer_chunks(layer):
            write_vars(file, f"{layer_path}/{group}/vars", name, [v.numpy() for v in chunk])
    else:                       # the layer's own hook (Keras's), which a layer may override
        store = {}
        layer.save_own_variables(store)
        write_store(file, f"{layer_path}/vars", layer.name, store)


def write_optimizer(file, optimizer, values, inner_values=None):
    """``optimizer/vars``; a loss scaler's inner optimizer's also under
    ``optimizer/inner_optimizer/vars``, as Keras keeps them (``inner_values``)."""
    write_vars(file, "optimizer/vars", optimizer.name, values)
    if inner_values is not None:
        write_vars(file, "optimizer/inner_optimizer/vars", optimizer.inner_optimizer.name,
                   inner_values)


def read_store(file, path):
    """Every dataset of the ``vars`` group at ``path`` by its key (none when it is absent)."""
    group = file.get(path)
    return {} if group is None else {key: np.asarray(group[key]) for key in group}


def read_vars(file, path):
    """The arrays of the ``vars`` group at ``path`` in order (none when the group is absent)."""
    group = file.get(path)
    if group is None:
        return []
    return [np.asarray(group[str(i)]) for i in range(len(group))]


def read_layer(file, layer, filepath, layer_path):
    wrapped = WRAPPED.get(type(layer).__name__, {})
    for attribute in wrapped.values():
        read_layer(file, getattr(layer, attribute), filepath, f"{layer_path}/{attribute}")
    if type(layer).__name__ in WRAPPED_LISTS:
        for sublayer, path in _listed_sublayers(layer, layer_path):
            read_layer(file, sublayer, filepath, path)
    elif type(layer).__name__ in SUBLAYER_WEIGHTS:
        assign(layer, [value for (group, _), _ in _sublayer_chunks(layer)
                       for value in read_vars(file, f"{layer_path}/{group}/vars")],
               filepath, layer_path)
    elif type(layer).__name__ in RECURRENT:
        assign(layer, read_vars(file, variables_path(layer_path, type(layer).__name__)),
               filepath, layer_path)
    elif not wrapped:
        try:
            layer.load_own_variables(read_store(file, f"{layer_path}/vars"))
        except ValueError as error:
            raise ValueError(f"{filepath}: {error} (under {layer_path!r})") from None


def _listed_sublayers(layer, layer_path):
    """(sublayer, its path) for a layer holding a list of them (``WRAPPED_LISTS``): named in
    the list's container as Keras names a container's objects (``group_names``)."""
    found = []
    for attribute in WRAPPED_LISTS[type(layer).__name__].values():
        sublayers = getattr(layer, attribute)
        names = group_names([type(sublayer).__name__ for sublayer in sublayers])
        found += [(sublayer, f"{layer_path}/{attribute}/{name}")
                  for sublayer, name in zip(sublayers, names)]
    return found


def _sublayer_chunks(layer):
    """``layer.weights`` split among the sublayers Keras would give it (equal chunks)."""
    groups = SUBLAYER_WEIGHTS[type(layer).__name__]
    size = len(layer.weights) // len(groups)
    return [(group, layer.weights[i * size:(i + 1) * size]) for i, group in enumerate(groups)]


def assign(layer, values, filepath, layer_path):
    variables = layer.weights
    if len(values) != len(variables):
        raise ValueError(f"{filepath}: layer {layer.name!r} ({type(layer).__name__}) has "
                         f"{len(variables)} weights, the file holds {len(values)} under "
                         f"{layer_path!r}")
    for variable, value in zip(variables, values):
        if tuple(value.shape) != tuple(variable.shape):
            raise ValueError(f"{filepath}: layer {layer.name!r} weight {variable.name!r} has "
                             f"shape {tuple(variable.shape)}, the file holds shape "
                             f"{tuple(value.shape)} under {layer_path!r}")
        variable.assign(value)
