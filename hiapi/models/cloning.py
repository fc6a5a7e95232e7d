"""``clone_model``: a new model with the same architecture and fresh weights (Keras 3's
``keras.models.clone_model``), and ``model_from_json``::

    copy = hiapi.models.clone_model(model)                     # new layers, new weights
    frozen = hiapi.models.clone_model(
        model, clone_function=lambda layer: layer.__class__.from_config(
            {**layer.get_config(), "trainable": False}))

Each layer is remade by ``clone_function`` (default: ``from_config(get_config())``, once per
layer, so a shared layer stays shared), then a functional model's calls are replayed on new
inputs (``call_function(layer, *args, **kwargs)`` makes them when given); a Sequential model is
restacked; a subclassed model is ``from_config(get_config())``.
"""
from __future__ import annotations

import json
from typing import Any, Callable, Mapping

from hiapi.graph.var import Var
from hiapi.layers.input_layer import Input
from hiapi.layers.layer import Layer, _flatten, _map
from hiapi.models import model_config
from hiapi.models.functional import Model
from hiapi.models.op_node import OpNode
from hiapi.models.sequential import Sequential
from hiapi.saving.serialization_lib import deserialize_keras_object


def _fresh(layer: Layer) -> Layer:
    return layer.__class__.from_config(layer.get_config())


def clone_model(model: Model, input_tensors: Any = None,
                clone_function: Callable[[Layer], Layer] | None = None,
                call_function: Callable[..., Any] | None = None, recursive: bool = False,
                **kwargs: Any) -> Model:
    """A copy of ``model``'s architecture with new layers and freshly initialised weights.
    ``input_tensors`` (``hiapi.Input`` tensors) become the new model's inputs;
    ``recursive=True`` clones nested Sequential and functional models with the same
    ``clone_function`` instead of handing them to it whole."""
    if kwargs:
        raise TypeError(f"clone_model: unexpected keyword argument(s) {', '.join(kwargs)}")
    clone_function = clone_function or _fresh
    if not model_config.is_graph_model(model):
        if input_tensors is not None or clone_function is not _fresh:
            raise ValueError(f"clone_model: model {model.name!r} is a subclassed model; "
                             f"input_tensors and clone_function apply only to Sequential and "
                             f"functional models (it is cloned with from_config(get_config()))")
        return model.__class__.from_config(model.get_config())
    clones: dict[Layer, Layer] = {}

    def clone(layer):
        if layer not in clones:
            nested = recursive and model_config.is_graph_model(layer)
            clones[layer] = clone_model(layer, clone_function=clone_function,
                                        call_function=call_function, recursive=True) \
                if nested else clone_function(layer)
        return clones[layer]
    if isinstance(model, Sequential):
        return _clone_sequential(model, input_tensors, clone)
    return _clone_functional(model, input_tensors, clone, call_function)


def _new_inputs(model, input_tensors):
    if input_tensors is None:
        return [Input(shape=var.shape[1:], batch_size=var.shape[0], dtype=var.dtype.name,
                      name=var._keras_history[0].name) for var in model.inputs]
    tensors = _flatten(input_tensors)
    if len(tensors) != len(model.inputs) or not all(isinstance(t, Var) for t in tensors):
        raise ValueError(f"clone_model: input_tensors must be {len(model.inputs)} symbolic "
                         f"tensor(s) from hiapi.Input, got {input_tensors!r}")
    return tensors


def _clone_sequential(model, input_tensors, clone):
    stack = [clone(layer) for layer in model.layers]
    if input_tensors is not None:
        stack.insert(0, _new_inputs(model, input_tensors)[0])
    elif model._input_shape is not None:
        stack.insert(0, Input(shape=model._input_shape[1:], batch_size=model._input_shape[0],
                              dtype=model._input_dtype))
    return Sequential(stack, name=model.name, trainable=model.trainable)


def _clone_functional(model, input_tensors, clone, call_function):
    inputs = _new_inputs(model, input_tensors)
    mapping = dict(zip(model.inputs, inputs))
    for layer, call_inputs, call_outputs in model._nodes:
        args = _map(mapping.__getitem__, call_inputs)
        if isinstance(layer, OpNode):
            outputs = layer(args)
        elif call_function is not None:
            outputs = call_function(clone(layer), args)
        else:
            outputs = clone(layer)(args)
        for old, new in zip(_flatten(call_outputs), _flatten(outputs)):
            mapping[old] = new
    structure = model._inputs_struct
    new_inputs = dict(zip(sorted(structure), inputs)) if isinstance(structure, dict) else \
        inputs if isinstance(structure, (list, tuple)) else inputs[0]
    return Model(new_inputs, _map(mapping.__getitem__, model._outputs_struct),
                 name=model.name, trainable=model.trainable)


def model_from_json(json_string: str, custom_objects: Mapping[str, Any] | None = None) -> Any:
    """The model ``model.to_json()`` described, with fresh weights."""
    return deserialize_keras_object(json.loads(json_string), custom_objects)
