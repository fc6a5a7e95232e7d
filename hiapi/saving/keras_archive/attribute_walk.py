"""Where Keras 3 keeps the weights of a subclassed model in ``model.weights.h5``: the model's
own variables in ``vars``, then its attributes in name order, each layer at its attribute's
name, each list or dict of layers as a container (``blocks/dense``, ``blocks/dense_1``), and
``layers`` (every tracked layer, in assignment order) for those no attribute reached first.
An object reached twice is written once, where it was first met. A Sequential or functional
model met on the way keeps its own layout (``h5_weights.write_model``); hiapi's built-in layers
theirs (``write_layer``).
"""
from hiapi.layers.layer import Layer
from hiapi.models import model_config, subclassed
from hiapi.saving.keras_archive.h5_weights import (group_names, read_layer, read_model,
                                                    read_vars, write_layer, write_model,
                                                    write_vars)


def walks(layer):
    """Whether ``layer``'s weights are kept by attribute (a subclassed model)."""
    return hasattr(layer, "learn_inputs") and subclassed.is_subclassed(layer)


def children(layer):
    """``(path, child layer)`` in Keras's walk order."""
    names = sorted({name for name in vars(layer) if not name.startswith("_")} | {"layers"})
    entries = []
    for name in names:
        value = list(layer._sublayers) if name == "layers" else getattr(layer, name)
        if isinstance(value, Layer):
            entries.append((name, value))
        elif isinstance(value, (list, tuple, dict)):
            items = [item for item in (value.values() if isinstance(value, dict) else value)
                     if isinstance(item, Layer)]
            entries += [(f"{name}/{group}", item) for group, item in
                        zip(group_names(type(item).__name__ for item in items), items)]
    return entries


def write(file, layer, path="", visited=None):
    visited = set() if visited is None else visited
    if id(layer) in visited:
        return
    visited.add(id(layer))
    prefix = f"{path}/" if path else ""
    if model_config.is_graph_model(layer):
        write_model(file, layer, model_config.keras_layers(layer), path)
    elif walks(layer):
        write_vars(file, f"{prefix}vars", layer.name, [v.numpy() for v in layer._weights])
        for child_path, child in children(layer):
            write(file, child, prefix + child_path, visited)
    else:
        write_layer(file, layer, path)


def read(file, layer, filepath, path="", visited=None):
    visited = set() if visited is None else visited
    if id(layer) in visited:
        return
    visited.add(id(layer))
    prefix = f"{path}/" if path else ""
    if model_config.is_graph_model(layer):
        read_model(file, layer, filepath, path)
    elif walks(layer):
        own = layer._weights
        values = read_vars(file, f"{prefix}vars")
        if len(values) != len(own):
            raise ValueError(f"{filepath}: model {layer.name!r} has {len(own)} weights of its "
                             f"own, the file holds {len(values)} under {prefix + 'vars'!r}")
        for variable, value in zip(own, values):
            variable.assign(value)
        for child_path, child in children(layer):
            read(file, child, filepath, prefix + child_path, visited)
    else:
        read_layer(file, layer, filepath, path)
