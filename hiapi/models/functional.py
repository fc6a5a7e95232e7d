"""``Model``: a layer graph from inputs to outputs, with the training API.

``Model(inputs, outputs)`` records the layer calls that lead from the ``Input`` Vars to the
outputs (the *nodes*), so the model can be called again on new inputs, e.g. with
``training=True`` for the train graph, or inside another model, by replaying those calls::

    inputs = hiapi.Input(shape=(784,))
    hidden = hiapi.layers.Dense(64, activation="relu")(inputs)
    model = hiapi.Model(inputs, hiapi.layers.Dense(10)(hidden))
"""
from __future__ import annotations

import json
import os
from typing import Any, Mapping, Sequence

from hiapi.hints import Tensor
from hiapi.graph.var import Var
from hiapi.layers.input_layer import InputLayer
from hiapi.layers.layer import Layer, _flatten, _map
from hiapi.layers.layer_io import _shapes
from hiapi.layers.layer_saving import is_flat_shape
from hiapi.models import model_config, op_node, subclassed
from hiapi.models.input_signature import InputSignature, check_input
from hiapi.models.trainer import Trainer
from hiapi.serialization import saving_functions
from hiapi.serialization.object_registration import register_builtin
from hiapi.saving.serialization_lib import serialize_layer


class Model(Trainer, Layer):
    def __init__(self, inputs: Tensor | Sequence[Tensor] | Mapping[str, Tensor] | None = None,
                 outputs: Tensor | Sequence[Tensor] | Mapping[str, Tensor] | None = None,
                 name: str | None = None, trainable: bool = True, **kwargs: Any) -> None:
        Layer.__init__(self, name=name, trainable=trainable, **kwargs)
        Trainer.__init__(self)
        if inputs is None and outputs is None:
            self._signature = None   # subclassed: layers are attributes, call() is the user's
            return
        if inputs is None or outputs is None:
            raise ValueError(f"Model {self.name!r}: give both inputs and outputs")
        self._inputs_struct, self._outputs_struct = inputs, outputs
        self.inputs, self.outputs = _flatten(inputs), _flatten(outputs)
        for var in self.inputs + self.outputs:
            if not isinstance(var, Var):
                raise TypeError(f"Model {self.name!r}: inputs and outputs must be symbolic "
                                f"tensors from hiapi.Input and layer calls, got {var!r}")
        self._nodes = _collect_nodes(self.name, self.inputs, self.outputs)
        self._layers = [var._keras_history[0] for var in self.inputs] + \
            _unique_layers(node[0] for node in self._nodes if isinstance(node[0], Layer))
        for layer in self._layers:
            if layer not in self._sublayers:
                self._sublayers.append(layer)
        self.built = True

    @property
    def input(self) -> Tensor | list[Tensor]:
        """The model's input tensor (a list when it has several), as in Keras."""
        return self.inputs[0] if len(self.inputs) == 1 else list(self.inputs)

    @property
    def output(self) -> Tensor | list[Tensor]:
        return self.outputs[0] if len(self.outputs) == 1 else list(self.outputs)

    @property
    def input_shape(self):
        """The shape of the model's own input (a list of shapes when it has several), as
        Keras 3's ``Functional.input_shape``; a subclassed model has its first call's."""
        if subclassed.is_subclassed(self):
            return Layer.input_shape.fget(self)
        return _shapes(self.input)

    @property
    def output_shape(self):
        """The shape of the model's own output (a list when it has several), as Keras 3's
        ``Functional.output_shape``; a subclassed model has its first call's."""
        if subclassed.is_subclassed(self):
            return Layer.output_shape.fget(self)
        return _shapes(self.output)

    @property
    def layers(self) -> list[Layer]:
        return list(getattr(self, "_layers", self._sublayers))

    def get_layer(self, name: str | None = None, index: int | None = None) -> Layer:
        if index is not None:
            return self.layers[index]
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise ValueError(f"Model {self.name!r} has no layer named {name!r}; its layers are "
                         f"{', '.join(layer.name for layer in self.layers)}")

    def keras_config(self, strict: bool = False) -> dict[str, Any] | None:
        """This model as ``serialize_keras_object`` writes it, or None for a subclassed model
        (written as a layer of its own class, from its ``get_config``)."""
        if not model_config.is_functional(self):
            return None
        return model_config.functional_config(self, strict)

    def get_config(self) -> dict[str, Any]:
        """The whole architecture, as in Keras 3: every layer with its config and the calls
        made of it, and the model's inputs and outputs; ``Model.from_config`` rebuilds it."""
        entry = self.keras_config()
        return Layer.get_config(self) if entry is None else entry["config"]

    @classmethod
    def from_config(cls, config: dict[str, Any],
                    custom_objects: Mapping[str, Any] | None = None) -> Model:
        """A functional model from ``get_config``'s dict (fresh weights), or, for a
        subclassed model, ``cls(**config)``."""
        if all(key in config for key in ("name", "layers", "input_layers", "output_layers")):
            return model_config.functional_from_config(cls, config, custom_objects)
        return cls(**config)

    def to_json(self, **kwargs: Any) -> str:
        """The architecture as JSON (``serialize_keras_object(model)``); read it back with
        ``hiapi.models.model_from_json``. ``kwargs`` go to ``json.dumps``."""
        return json.dumps(serialize_layer(self), **kwargs)

    def save(self, filepath: str | os.PathLike[str], include_optimizer: bool = True) -> None:
        """Save architecture, weights, compile configuration and optimizer state to one file
        (atomically); ``hiapi.models.load_model(filepath)`` restores it."""
        saving_functions.get("save_model")(self, filepath, include_optimizer=include_optimizer)

    def save_weights(self, filepath: str | os.PathLike[str]) -> None:
        saving_functions.get("save_weights")(self, filepath)

    def load_weights(self, filepath: str | os.PathLike[str], skip_mismatch: bool = False,
                     **kwargs: Any) -> None:
        """Keras 3's ``load_weights``: hiapi's files, Keras 3's ``.weights.h5`` and
        ``.keras``, and Keras 2's ``.h5`` (``by_name=True`` matches its layers by name)."""
        unknown = set(kwargs) - {"by_name"}
        if unknown:
            raise TypeError(f"load_weights() got unexpected keyword arguments "
                            f"{sorted(unknown)}")
        saving_functions.get("load_weights")(self, filepath, skip_mismatch=skip_mismatch,
                                             by_name=kwargs.get("by_name"))

    def _autocast_inputs(self, inputs):
        """A functional or Sequential model passes its inputs on as they are, as Keras's
        ``Functional`` does (it does not convert them): each layer casts for itself, so a
        float32 first layer of a mixed_float16 model computes in float32. A subclassed model
        casts them to its compute dtype, as every Keras layer does."""
        if subclassed.is_subclassed(self):
            return Layer._autocast_inputs(self, inputs)
        return inputs

    def compute_mask(self, inputs, previous_mask=None):
        return None     # replaying the layers attached their own masks to the outputs

    def input_specs(self):
        """(shape, dtype) of each input, batch axis included (None for a subclassed model
        that has not seen its inputs yet)."""
        if subclassed.is_subclassed(self):
            return self._signature.specs if self._signature is not None else None
        return [(var.shape, var.dtype) for var in self.inputs]

    def structure_inputs(self, flat):
        """One placeholder per input, in the structure ``call`` takes."""
        if subclassed.is_subclassed(self) and self._signature is not None:
            return self._signature.structure(flat)
        return flat[0] if len(flat) == 1 else flat

    def learn_inputs(self, x):
        """A subclassed model learns its input signature from the first data it is given."""
        if subclassed.is_subclassed(self):
            subclassed.learn_signature(self, InputSignature.from_data(x))

    def learn_outputs(self, outputs):
        """A subclassed model returning a dict names its outputs by the keys (as Keras)."""
        if subclassed.is_subclassed(self) and "_outputs_struct" not in self.__dict__:
            self._outputs_struct = outputs

    def build(self, input_shape=None):
        """Create the weights: a subclassed model traces ``call`` on inputs of
        ``input_shape`` (a shape, a list of shapes or a dict of them), as in Keras."""
        if not subclassed.is_subclassed(self) or self.built or subclassed.tracing(self):
            self.built = True         # (called by the first call's own trace: nothing to do)
            return
        if input_shape is None:
            raise ValueError(f"Model {self.name!r}: build() needs the input_shape of a "
                             f"subclassed model")
        subclassed.build(self, input_shape)

    def saved_variables(self):
        """A model's own variables: its layers are saved each under its own path."""
        return list(self._weights)

    def build_from_config(self, config):
        """A subclassed model may have been built for a list or dict of input shapes."""
        shape = (config or {}).get("input_shape")
        if shape and not is_flat_shape(shape):
            self.build(shape)
        else:
            super().build_from_config(config)

    def _call_symbolic(self, inputs, training, mask=None):
        if not subclassed.is_subclassed(self) or self.built:
            return super()._call_symbolic(inputs, training, mask)
        subclassed.learn_signature(self, InputSignature.from_tensors(inputs))
        with subclassed.first_trace(self):
            outputs = super()._call_symbolic(inputs, training, mask)
        subclassed.check_tracked(self, inputs, outputs)
        return outputs

    def call(self, inputs, training=None):
        new_inputs = _flatten(inputs)
        if len(new_inputs) != len(self.inputs):
            raise ValueError(f"Model {self.name!r} takes {len(self.inputs)} inputs, got "
                             f"{len(new_inputs)}")
        mapping = {}
        for index, (old, new) in enumerate(zip(self.inputs, new_inputs)):
            check_input(self, index, old.shape, new.shape)
            mapping[old] = new
        for layer, call_inputs, call_outputs in self._nodes:
            outputs = layer(_map(mapping.__getitem__, call_inputs), training=training)
            for old, new in zip(_flatten(call_outputs), _flatten(outputs)):
                mapping[old] = new
                if old._keras_logits in mapping:   # softmax/sigmoid applied as a raw op
                    new._keras_logits = mapping[old._keras_logits]
        return _map(mapping.__getitem__, self._outputs_struct)


register_builtin("Functional", Model)
register_builtin("Model", Model)


def _collect_nodes(model_name, inputs, outputs):
    """Layer calls between ``inputs`` and ``outputs`` in an order that runs each after the
    calls producing its inputs."""
    nodes, done, inputs = [], set(), set(inputs)

    def visit(var, path):
        if var in inputs:
            return
        history = var._keras_history
        if history is None:       # a raw op on layer outputs (x + y, ops.relu(x)): a node too
            history = op_node.node_for(var)
            if history is None:
                raise ValueError(f"Model {model_name!r}: the outputs depend on {var!r}, a "
                                 f"placeholder that is not among the model's inputs")
            var._keras_history = history
        layer, call_inputs, call_outputs = history
        if isinstance(layer, InputLayer):
            raise ValueError(f"Model {model_name!r}: the outputs depend on Input "
                             f"{layer.name!r}, which is not among the model's inputs")
        key = id(call_outputs)
        if key in done:
            return
        for inp in _flatten(call_inputs):
            visit(inp, path)
        done.add(key)
        nodes.append(history)

    for var in outputs:
        visit(var, ())
    return nodes


def _unique_layers(layers):
    out = []
    for layer in layers:
        if layer not in out:
            out.append(layer)
    return out
