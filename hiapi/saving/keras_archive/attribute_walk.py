"""Where Keras 3 keeps each layer's weights in ``model.weights.h5``: the path it walks to
reach the layer from the model.

A Sequential or functional model lists its layers in the container ``layers``, each named
after its class in Keras's order (``layers/dense``, ``layers/dense_1``; ``keras_layers``). A
subclassed model keeps its own variables in ``vars``, then its attributes in name order: a
layer at its attribute's name, a list or dict of layers as a container (``blocks/dense``,
``blocks/dense_1``), and ``layers`` (every tracked layer, in assignment order) for those no
attribute reached first. An object reached twice is written once, where it was first met.
hiapi's built-in layers keep their own layout (``h5_weights.write_layer``).
"""
from hiapi.layers.layer import Layer
from hiapi.models import model_config, subclassed
from hiapi.layers.input_layer import InputLayer
from hiapi.saving.keras_archive.h5_weights import (group_names, read_layer, read_store,
                                                    write_layer, write_store, write_vars)


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


def _graph_children(model):
    """A Sequential or functional model's layers in Keras's order, as ``layers/<name>``
    (Sequential leaves out its InputLayer, a functional model keeps them)."""
    layers = model_config.keras_layers(model)
    return [(f"layers/{group}", layer) for layer, group in
            zip(layers, group_names(type(layer).__name__ for layer in layers))]


def _first_visit(layer, visited):
    """Whether ``layer`` is met for the first time on this walk (then marked as met)."""
    if id(layer) in visited:
        return False
    visited.add(id(layer))
    return True


def walk(layer, path="", visited=None):
    """``(path, object)`` for ``layer`` and every layer reached from it, in Keras's order,
    each once (where first met): the paths name its weights' groups and its assets' folder."""
    visited = set() if visited is None else visited
    if not _first_visit(layer, visited):
        return
    yield path, layer
    prefix = f"{path}/" if path else ""
    found = _graph_children(layer) if model_config.is_graph_model(layer) else \
        children(layer) if walks(layer) else []
    for child_path, child in found:
        yield from walk(child, prefix + child_path, visited)


def write(file, model):
    for path, layer in walk(model):
        prefix = f"{path}/" if path else ""
        if model_config.is_graph_model(layer):
            write_vars(file, f"{prefix}vars", layer.name, [])
        elif walks(layer):
            store = {}
            layer.save_own_variables(store)
            write_store(file, f"{prefix}vars", layer.name, store)
        else:
            write_layer(file, layer, path)


def read(file, model, filepath):
    for path, layer in walk(model):
        prefix = f"{path}/" if path else ""
        if model_config.is_graph_model(layer) or isinstance(layer, InputLayer):
            continue
        if walks(layer):
            try:
                layer.load_own_variables(read_store(file, f"{prefix}vars"))
            except ValueError as error:
                raise ValueError(f"{filepath}: {error} (under {prefix + 'vars'!r})") from None
        else:
            read_layer(file, layer, filepath, path)
