"""Sequential and functional models between hiapi and Keras 3's ``config.json``.

A Keras functional config lists the model's layers in Keras's ``model.layers`` order, each
with its ``inbound_nodes`` (one per call: the call's arguments, tensors written as
``__keras_tensor__`` with ``keras_history = [layer name, call index, output index]``), and
the model's ``input_layers``/``output_layers`` as such triples. The order matters beyond the
config: the weights file names layers by their position in it (``dense``, ``dense_1``), so
``keras_layers`` computes it exactly as Keras's ``map_graph`` does (deepest first, ties in the
order a depth-first walk from the outputs first meets them). Reading replays the calls,
deferring a call until the tensors it needs exist (shared layers may be called at several
depths).
"""
from hiapi.layers.call_signature import PositionalInputs
from hiapi.layers.input_layer import Input, InputLayer
from hiapi.layers.layer import _flatten, _map
from hiapi.layers.rnn_loop import WithInitialState
from hiapi.models.op_node import OpNode
from hiapi.saving.keras_archive.layer_config import (HIAPI_SUGGESTION, dtype_name,
                                                     dtype_policy, keras_object)
from hiapi.serialization.object_registration import custom_object_scope
from hiapi.saving.serialization_lib import deserialize_keras_object, serialize_layer


# call arguments of a Keras node that change what a layer computes (``training`` and ``mask``
# are set by the model itself)
CALL_OPTIONS = ("use_causal_mask", "return_attention_scores")
TENSOR_KWARGS = ("initial_state",)      # call arguments that hold tensors (a recurrent layer's)
OP_MODULE = "hiapi.models.op_node"     # a raw op's entry (never in a .keras file)


def is_graph_model(layer):
    """A Sequential or functional model: Keras lists its layers, and they hold the weights
    (a subclassed model is saved as a layer of its own)."""
    return is_functional(layer) or isinstance(getattr(layer, "_stack", None), list)


def is_functional(layer):
    return hasattr(layer, "_nodes")


def keras_layers(model):
    """``model.layers`` as Keras orders them (Sequential: without its InputLayer)."""
    if not is_functional(model):
        return [layer for layer in model.layers if not isinstance(layer, InputLayer)]
    nodes, indices = _walk(model)
    depth_of_node, depth_of_layer = {}, {}
    for key in reversed(nodes):
        layer, parents = nodes[key]
        depth = max(depth_of_node.setdefault(key, 0), depth_of_layer.get(layer, 0))
        depth_of_layer[layer] = depth_of_node[key] = depth
        for parent in parents:
            depth_of_node[parent] = max(depth + 1, depth_of_node.get(parent, 0))
    for var in model.inputs:
        layer = var._keras_history[0]
        if layer not in depth_of_layer:           # an input no output depends on
            depth_of_layer[layer], indices[layer] = 0, -1
    return sorted(depth_of_layer, key=lambda layer: (-depth_of_layer[layer], indices[layer]))


def keras_trainable_weights(model):
    """``model.trainable_weights`` in the order Keras lists them (layer by layer in Keras's
    order): the order in which Keras builds, and saves, the optimizer's slots."""
    found = []
    for layer in keras_layers(model):
        found += keras_trainable_weights(layer) if is_graph_model(layer) \
            else layer.trainable_weights
    return found


def _walk(model):
    """Keras's ``_build_map``: {node: (layer, parent nodes)} in decreasing depth, and each
    layer's first-visit index. A node is the ``id`` of a call's outputs."""
    nodes, indices, inputs = {}, {}, set(model.inputs)

    def visit(var):
        layer, call_inputs, call_outputs = var._keras_history
        key = id(call_outputs)
        if key in nodes:
            return
        indices.setdefault(layer, len(indices))
        parents = []
        if not isinstance(layer, InputLayer) and var not in inputs:
            for parent in _flatten(call_inputs):
                visit(parent)
                parents.append(id(parent._keras_history[2]))
        nodes[key] = (layer, parents)

    for var in model.outputs:
        visit(var)
    return nodes, indices


def _input_layer_config(layer):
    return keras_object("keras.layers", "InputLayer", {
        "batch_shape": list(layer.batch_shape), "dtype": layer.dtype, "sparse": False,
        "ragged": False, "name": layer.name, "optional": False})


def sequential_config(model, strict=False):
    """A Sequential model's entry: its config lists an InputLayer (when the input shape is
    known) and then every layer, each as ``serialize_keras_object`` writes it."""
    if model._input_shape is None and strict:
        raise ValueError(f"cannot write model {model.name!r} to a Keras .keras file: it has "
                         f"no input shape yet (start it with hiapi.Input or build it)")
    layers = [serialize_layer(layer, strict) for layer in keras_layers(model)]
    config = {"name": model.name, "trainable": model.trainable,
              "dtype": dtype_policy(model.dtype_policy.name), "layers": layers}
    entry = {"module": "keras", "class_name": "Sequential", "config": config,
             "registered_name": None}
    if model._input_shape is not None:
        batch_shape = [None, *model._input_shape[1:]]
        source = model._input_layer
        layers.insert(0, _input_layer_config(source) if source is not None else keras_object(
            "keras.layers", "InputLayer", {"batch_shape": batch_shape,
                                           "dtype": model._input_dtype or "float32",
                                           "sparse": False, "ragged": False,
                                           "name": "input_layer", "optional": False}))
        config["build_input_shape"] = batch_shape
        entry["build_config"] = {"input_shape": batch_shape}
    return entry


def functional_config(model, strict=False):
    """A functional model's entry: its layers in Keras's order, each with the calls made of
    it (``inbound_nodes``), and the model's input and output tensors. A raw op between
    layers is an ``OpNode`` entry in memory, and refused in a ``.keras`` file."""
    calls, refs, names = {}, {}, {}     # layer -> its calls; var -> [name, call, output]
    for var in model.inputs:
        refs[var] = [var._keras_history[0].name, 0, 0]
    for layer, call_inputs, call_outputs in model._nodes:
        if isinstance(layer, OpNode):
            if strict:
                raise ValueError(f"cannot write model {model.name!r} to a Keras .keras file: "
                                 f"it applies the operation {layer.get_config()!r} directly "
                                 f"to tensors, which Keras records differently; wrap it in a "
                                 f"layer, or {HIAPI_SUGGESTION}")
            names[layer] = f"{layer.name}_op_{len(names)}"
        index = len(calls.setdefault(layer, []))
        calls[layer].append(call_inputs)
        for j, var in enumerate(_flatten(call_outputs)):
            refs[var] = [names.get(layer, layer.name), index, j]
    tensor = lambda var: {"class_name": "__keras_tensor__", "config": {
        "shape": list(var.shape), "dtype": var.dtype.name, "keras_history": refs[var]}}
    layers = []
    for layer in keras_layers(model):
        if isinstance(layer, InputLayer):
            entry, nodes = _input_layer_config(layer), []
        else:
            entry = _op_entry(layer) if isinstance(layer, OpNode) else \
                serialize_layer(layer, strict)
            nodes = [_inbound_node(layer, inputs, tensor) for inputs in calls[layer]]
        layers.append({**entry, "name": names.get(layer, layer.name), "inbound_nodes": nodes})
    ends = lambda structure: refs[structure] if not isinstance(structure, (list, tuple, dict)) \
        else _map(refs.__getitem__, structure)
    return {"module": "keras.src.models.functional", "class_name": "Functional", "config": {
        "name": model.name, "trainable": model.trainable, "layers": layers,
        "input_layers": ends(model._inputs_struct),
        "output_layers": ends(model._outputs_struct)},
        "registered_name": "Functional", "build_config": {"input_shape": None}}


def _op_entry(node):
    return {"module": OP_MODULE, "class_name": "OpNode", "config": node.get_config(),
            "registered_name": None}


def _inbound_node(layer, inputs, tensor):
    """One call's ``{"args", "kwargs"}``: several positional inputs as separate arguments,
    attention's packed [query, value, key] as Keras's ``call(query, value, key)``."""
    if type(layer).__name__ == "MultiHeadAttention":
        options = layer._call_options or {}
        if len(inputs) > 3 or options.get("return_attention_scores"):
            raise ValueError(f"cannot write layer {layer.name!r} (MultiHeadAttention) to a "
                             f"Keras .keras file with an attention_mask or "
                             f"return_attention_scores; {HIAPI_SUGGESTION}")
        kwargs = {"use_causal_mask": True} if options.get("use_causal_mask") else {}
        return {"args": [tensor(var) for var in inputs], "kwargs": kwargs}
    if isinstance(inputs, PositionalInputs):
        return {"args": list(_map(tensor, inputs)), "kwargs": {}}
    if isinstance(inputs, WithInitialState):      # Keras: rnn(x, initial_state=[...])
        sequence, states = inputs
        return {"args": [_map(tensor, sequence)],
                "kwargs": {"initial_state": [tensor(s) for s in states]}}
    return {"args": [_map(tensor, inputs)], "kwargs": {}}


def _input_from_keras(config):
    shape = config.get("batch_shape") or [None, *config["batch_input_shape"][1:]]
    return Input(shape=shape[1:], batch_size=shape[0], dtype=config.get("dtype") or None,
                 name=config.get("name"))


def _layer_from_entry(entry):
    if entry.get("module") == OP_MODULE and entry["class_name"] == "OpNode":
        return OpNode.from_config(entry["config"])
    return deserialize_keras_object(entry)


def sequential_from_config(cls, config, custom_objects=None):
    """A ``cls`` (Sequential) from its config: Keras's dict, or a bare list of layers."""
    if isinstance(config, list):
        config = {"layers": config}
    entries = list(config["layers"])
    with custom_object_scope(custom_objects):
        if entries and entries[0]["class_name"] == "InputLayer":
            stack = [_input_from_keras(entries.pop(0)["config"])]
        elif config.get("build_input_shape"):
            stack = [Input(shape=config["build_input_shape"][1:])]
        else:
            stack = []
        stack += [_layer_from_entry(e) for e in entries]
    dtype = config.get("dtype")
    return cls(stack, name=config.get("name"), trainable=config.get("trainable", True),
               **({} if dtype is None else {"dtype": dtype_name(dtype)}))


def functional_from_config(cls, config, custom_objects=None, filepath="config"):
    """A ``cls`` (functional Model) from its config: the layers made, then called as the
    ``inbound_nodes`` say, each call once the tensors it needs exist."""
    outputs, inputs, pending = {}, {}, []
    with custom_object_scope(custom_objects):
        for entry in config["layers"]:
            name = entry.get("name") or entry["config"]["name"]
            if entry["class_name"] == "InputLayer":
                inputs[name] = _input_from_keras(entry["config"])
                outputs[(name, 0)] = [inputs[name]]
                continue
            layer = _layer_from_entry(entry)
            pending += [(layer, name, i, node) for i, node in enumerate(entry["inbound_nodes"])]
    while pending:
        ready = [p for p in pending if _tensors_known(p[3], outputs)]
        if not ready:
            raise ValueError(f"{filepath}: layer {pending[0][1]!r} is called on tensors no "
                             f"layer of the model produces")
        for item in ready:
            layer, name, index, node = item
            outputs[(name, index)] = _flatten(_call(layer, node, outputs, filepath, name))
            pending.remove(item)
    resolve = lambda ref: outputs[(ref[0], ref[1])][ref[2]]
    return cls(_ends(config["input_layers"], resolve), _ends(config["output_layers"], resolve),
               name=config.get("name"), trainable=config.get("trainable", True))


def _is_tensor(value):
    return isinstance(value, dict) and value.get("class_name") == "__keras_tensor__"


def _tensor_refs(structure):
    if _is_tensor(structure):
        return [structure["config"]["keras_history"]]
    if isinstance(structure, dict):
        structure = list(structure.values())
    if isinstance(structure, list):
        return [ref for item in structure for ref in _tensor_refs(item)]
    return []


def _tensors_known(node, outputs):
    return all((ref[0], ref[1]) in outputs
               for ref in _tensor_refs([node["args"], node.get("kwargs", {})]))


def _call(layer, node, outputs, filepath, name):
    kwargs = node.get("kwargs", {})
    unread = [key for key, value in kwargs.items()
              if key not in TENSOR_KWARGS and _tensor_refs(value)]
    if unread:
        raise ValueError(f"{filepath}: layer {name!r} is called with tensors as keyword "
                         f"arguments ({', '.join(unread)}), which hiapi does not read")

    def resolve(value):
        if _is_tensor(value):
            ref = value["config"]["keras_history"]
            return outputs[(ref[0], ref[1])][ref[2]]
        if isinstance(value, list):
            return [resolve(item) for item in value]
        if isinstance(value, dict):
            return {key: resolve(item) for key, item in value.items()}
        return value
    args = [resolve(arg) for arg in node["args"]]
    options = {key: value for key, value in kwargs.items() if key in CALL_OPTIONS and value}
    options.update({key: resolve(kwargs[key]) for key in TENSOR_KWARGS
                    if kwargs.get(key) is not None})
    return layer(args[0], **options) if len(args) == 1 else layer(*args, **options)


def _ends(structure, resolve):
    """``input_layers``/``output_layers``: one ``[name, node, index]`` triple, or a list or
    dict of them."""
    if isinstance(structure, dict):
        return {key: _ends(value, resolve) for key, value in structure.items()}
    if len(structure) == 3 and isinstance(structure[0], str) and isinstance(structure[1], int):
        return resolve(structure)
    return [_ends(item, resolve) for item in structure]
