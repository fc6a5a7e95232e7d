"""Model architecture to and from JSON-able dicts.

A layer is ``{"class_name", "config"}`` (its constructor arguments). A Sequential model lists its
layers. A functional model lists its layers, its inputs, and its *nodes* (one per layer call, in
call order) whose inputs refer to model inputs ``["input", k]`` or to earlier node outputs
``["node", i, j]``: replaying the calls rebuilds the graph, shared layers included.
"""
import inspect

import numpy as np

from hiapi.layers.call_signature import PositionalInputs
from hiapi.layers.rnn_loop import WithInitialState
from hiapi.layers.input_layer import Input, InputLayer
from hiapi.layers.layer import _flatten, _map
from hiapi.models import subclassed
from hiapi.models.op_node import OpNode
from hiapi.serialization.object_registration import custom_object_scope, get_registered_name
from hiapi.saving.serialization_lib import get_class


def serialize_layer(layer):
    from hiapi.models import Model, Sequential
    if isinstance(layer, Sequential):
        return {"class_name": "Sequential", "config": {
            "name": layer.name, "trainable": layer.trainable,
            "input_shape": list(layer._input_shape) if layer._input_shape else None,
            "input_dtype": layer._input_dtype,
            "layers": [serialize_layer(l) for l in layer.layers]}}
    if isinstance(layer, Model) and hasattr(layer, "_nodes"):
        return {"class_name": "Functional", "config": _functional_config(layer)}
    if isinstance(layer, Model):
        return _subclassed_config(layer)
    return {"class_name": get_registered_name(type(layer)), "config": layer.get_config()}


def _subclassed_config(model):
    """A subclassed model is its class (registered, as Keras requires), its ``get_config``
    (the constructor's arguments) and the input shape it was built for."""
    name = get_registered_name(type(model))
    signature = getattr(model, "_signature", None)
    if signature is None:
        raise ValueError(f"cannot save subclassed model {model.name!r} before it is built: "
                         f"call it, build(input_shape) or fit it first")
    config = model.get_config()
    try:
        type(model).from_config(dict(config))
    except TypeError as error:
        raise ValueError(f"cannot save subclassed model {model.name!r} ({type(model).__name__})"
                         f": its get_config() gives {sorted(config)}, which its __init__ does "
                         f"not accept ({error}); define get_config() returning the constructor's "
                         f"arguments (and from_config if they need converting), as Keras "
                         f"requires") from None
    return {"class_name": name, "config": config,
            "build_config": {"input_shape": signature.input_shape(),
                             "dtypes": [dtype for _, dtype in signature.specs]}}


def _functional_config(model):
    refs = {var: ["input", k] for k, var in enumerate(model.inputs)}
    nodes = []
    for i, (layer, call_inputs, call_outputs) in enumerate(model._nodes):
        node = {"inputs": _map(refs.__getitem__, call_inputs)}
        if isinstance(layer, OpNode):
            node["op"] = layer.get_config()
        else:
            node["layer"] = layer.name
        if isinstance(call_inputs, PositionalInputs):
            node["positional"] = True
        if isinstance(call_inputs, WithInitialState):   # rnn(x, initial_state=[...])
            node["initial_state"] = True
        nodes.append(node)
        for j, var in enumerate(_flatten(call_outputs)):
            refs[var] = ["node", i, j]
    layers = [serialize_layer(l) for l in model.layers if not isinstance(l, InputLayer)]
    return {"name": model.name, "trainable": model.trainable,
            "inputs": [{"name": var._keras_history[0].name, "shape": list(var.shape[1:]),
                        "batch_size": var.shape[0], "dtype": var.dtype.name}
                       for var in model.inputs],
            "layers": layers, "nodes": nodes,
            "input_keys": sorted(model._inputs_struct)
            if isinstance(model._inputs_struct, dict) else None,
            "outputs": _map(refs.__getitem__, model._outputs_struct)}


def deserialize_layer(config, custom_objects=None):
    from hiapi.models import Model, Sequential
    name, body = config["class_name"], dict(config["config"])
    if name == "Sequential":
        model = Sequential(name=body["name"], trainable=body.get("trainable", True))
        if body.get("input_shape"):
            model._input_dtype = body.get("input_dtype", "float32")
            model._input_shape = tuple(body["input_shape"])
        for layer_config in body["layers"]:
            model.add(deserialize_layer(layer_config, custom_objects))
        return model
    if name == "Functional":
        layers = {c["config"]["name"]: deserialize_layer(c, custom_objects)
                  for c in body["layers"]}
        inputs = [Input(shape=spec["shape"], batch_size=spec["batch_size"], dtype=spec["dtype"],
                        name=spec["name"]) for spec in body["inputs"]]
        outputs = []
        for node in body["nodes"]:
            resolve = lambda ref: inputs[ref[1]] if ref[0] == "input" else outputs[ref[1]][ref[2]]
            call = OpNode.from_config(node["op"]) if "op" in node else layers[node["layer"]]
            call_inputs = _map_refs(resolve, node["inputs"])
            if node.get("positional"):
                call_inputs = PositionalInputs(call_inputs)
            if node.get("initial_state"):
                call_inputs = WithInitialState(call_inputs)
            result = call(call_inputs)
            outputs.append(_flatten(result))
        resolve = lambda ref: inputs[ref[1]] if ref[0] == "input" else outputs[ref[1]][ref[2]]
        structure = dict(zip(body["input_keys"], inputs)) if body.get("input_keys") else \
            inputs if len(inputs) > 1 else inputs[0]
        return Model(structure, _map_refs(resolve, body["outputs"]), name=body["name"],
                     trainable=body.get("trainable", True))
    with custom_object_scope(custom_objects):
        cls = get_class(name)
    layer = cls.from_config(body, custom_objects=custom_objects) \
        if "custom_objects" in inspect.signature(cls.from_config).parameters \
        else cls.from_config(body)           # Lambda's (and Model's) take custom_objects
    if "build_config" in config:          # a subclassed model: weights exist once built
        subclassed.build(layer, **config["build_config"])
    return layer


def _map_refs(resolve, structure):
    """Apply ``resolve`` to each ``[kind, ...]`` reference in a nested list structure."""
    if isinstance(structure, list) and structure and isinstance(structure[0], str):
        return resolve(structure)
    if isinstance(structure, dict):
        return {key: _map_refs(resolve, item) for key, item in structure.items()}
    return [_map_refs(resolve, item) for item in structure]


def weight_manifest(model):
    """Per layer: name and weight shapes, to name the first mismatch when loading."""
    return [{"layer": layer.name, "shapes": [list(v.shape) for v in layer.weights]}
            for layer in model.layers if layer.weights or not isinstance(layer, InputLayer)]


def shapes_text(shapes):
    return "[" + ", ".join(str(tuple(s)) for s in shapes) + "]"


def as_array(variable):
    return np.asarray(variable.numpy())
