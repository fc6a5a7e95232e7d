"""Ops applied to layer outputs while building a functional model, as nodes of that model.

In Keras 3, ``x = a + b``, ``x += residual``, ``-a`` or ``keras.ops.relu(x)`` between symbolic
tensors each become a node (an operation call) of the functional model. Here such an expression
builds a raw graph op (the Var has no ``_keras_history``); ``Model(inputs, outputs)`` finds it
while walking back from the outputs and records an ``OpNode`` for it: the op and which of its
inputs are fixed (constants, variable reads) rather than fed by the model. Replaying the node
applies the same op to the new inputs, so the model can be called again (for the train graph,
or inside another model) and saved::

    inputs = hiapi.Input((8,))
    x = layers.Dense(8)(inputs)
    outputs = layers.Dense(8)(x) + x          # a residual connection, no Add layer needed
    model = hiapi.Model(inputs, outputs)

A saved op is its class (looked up only among ``hiapi.graph.ops``'s modules) and attributes; a
constant operand is saved as its values; an operand that reads a Variable outside any layer
cannot be saved, and ``save`` says so, naming it.
"""
import importlib

import numpy as np

from hiapi.graph.ops.sources import Constant, Placeholder, Read, constant


class OpNode:
    """One raw op between symbolic tensors of a functional model (duck-types the layer slot
    of a ``(layer, call inputs, call outputs)`` node)."""

    def __init__(self, op, operands):
        self.op = op
        self.operands = operands    # per op input: a fixed source Var, or None (fed)

    @property
    def name(self):
        return self.op.name

    def __call__(self, inputs, training=None):
        fed = iter(inputs)
        return self.op(*(next(fed) if v is None else v for v in self.operands))

    def __repr__(self):
        return f"<OpNode {self.op!r}>"

    def get_config(self):
        """The op as JSON: class, module, attributes, and the constant operands' values."""
        op = self.op
        module = type(op).__module__
        if not module.startswith("hiapi.graph.ops."):
            raise ValueError(f"cannot save the functional model: op {op!r} is not one of "
                             f"hiapi.graph.ops; wrap it in a Layer or hiapi.layers.Lambda")
        operands = []
        for var in self.operands:
            if var is None:
                operands.append(None)
            elif isinstance(var.op, Constant):
                operands.append({"value": var.op.value.tolist(), "dtype": var.dtype.name})
            else:
                raise ValueError(f"cannot save the functional model: op {op.name!r} reads "
                                 f"Variable {var.op.variable.name!r}, which belongs to no "
                                 f"layer; create it with add_weight inside a Layer")
        return {"op": type(op).__name__, "module": module,
                "attrs": {k: _encode(op.name, k, v) for k, v in op.attrs().items()},
                "operands": operands}

    @classmethod
    def from_config(cls, config):
        module = config["module"]
        if not module.startswith("hiapi.graph.ops."):
            raise ValueError(f"the saved model names op module {module!r}; only "
                             f"hiapi.graph.ops modules are loaded")
        op_class = getattr(importlib.import_module(module), config["op"], None)
        if not isinstance(op_class, type):
            raise ValueError(f"the saved model names op {config['op']!r}, which {module} "
                             f"does not define")
        op = op_class.__new__(op_class)
        op.__dict__.update({k: _decode(v) for k, v in config["attrs"].items()})
        operands = [None if o is None else constant(np.array(o["value"], o["dtype"]))
                    for o in config["operands"]]
        return cls(op, operands)


def is_fed(var):
    """Whether an op input is part of the model's data flow (not a constant or weight read)."""
    return not isinstance(var.op, (Constant, Read))


def node_for(var):
    """The ``(OpNode, call inputs, output)`` node of a Var built by a raw op."""
    if isinstance(var.op, Placeholder):
        return None
    operands = [None if is_fed(v) else v for v in var.inputs]
    return OpNode(var.op, operands), [v for v in var.inputs if is_fed(v)], var


def _encode(op_name, key, value):
    if isinstance(value, (bool, str)) or value is None:
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    if isinstance(value, np.dtype):
        return {"dtype": value.name}
    if isinstance(value, (tuple, list)):
        return {"tuple": [_encode(op_name, key, v) for v in value]}
    raise ValueError(f"cannot save the functional model: attribute {key!r} of op {op_name!r} "
                     f"is a {type(value).__name__}; wrap the op in a Layer")


def _decode(value):
    if isinstance(value, dict) and "dtype" in value:
        return np.dtype(value["dtype"])
    if isinstance(value, dict) and "tuple" in value:
        return tuple(_decode(v) for v in value["tuple"])
    return value
