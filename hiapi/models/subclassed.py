"""The part of ``Model`` that is particular to subclassed models (``class M(hiapi.Model)``
with layers assigned in ``__init__`` and its own ``call``).

Such a model has no ``Input`` tensors: its input signature comes from the first call, from
``build(input_shape)``, or from the first data it is fitted, evaluated or predicted on
(``input_signature.py``). Its compiled steps trace ``call`` on placeholders made from that
signature, which gives the same kind of graph a functional model's steps have, so every step
builder, backend and data-parallel strategy applies unchanged.

Tracing also checks what ``call`` read: a weight the model does not track (a layer created
inside ``call``, or kept where the model cannot see it) would never be trained or saved, so it
is an error naming the weight.
"""
from __future__ import annotations

from contextlib import contextmanager

from hiapi.graph import placeholder
from hiapi.graph.ops.sources import Read
from hiapi.layers.layer import _flatten
from hiapi.layers.layer_io import not_a_node
from hiapi.graph.tracing import collect_state
from hiapi.models.input_signature import InputSignature
from hiapi.random.seed_generator import is_global_state


def is_subclassed(model):
    """A Model built by subclassing: neither functional (``_nodes``) nor Sequential."""
    return "_nodes" not in model.__dict__ and "_stack" not in model.__dict__


@contextmanager
def first_trace(model):
    """Marks the first call's trace, during which ``build`` (called by ``Layer.__call__``, or
    by a user's ``build`` through ``super().build``) has nothing left to do."""
    model.__dict__["_first_trace"] = True
    try:
        yield
    finally:
        model.__dict__["_first_trace"] = False


def tracing(model):
    return model.__dict__.get("_first_trace", False)


def learn_signature(model, signature):
    """Remember the inputs the model is called on (the first signature wins)."""
    if getattr(model, "_signature", None) is None:
        model._signature = signature
        model._build_input_shape = signature.input_shape()    # Keras's build_config


def build(model, input_shape, dtypes=None):
    """``model.build(input_shape)``: trace ``call`` once on placeholders of that shape (and
    ``dtypes``, one per input, when loading a saved model), which creates every weight (Keras
    builds a subclassed model the same way)."""
    signature = InputSignature.from_shapes(input_shape, dtypes)
    learn_signature(model, signature)
    holders = [placeholder(shape, dtype) for shape, dtype in signature.specs]
    with collect_state(), not_a_node():
        model(signature.structure(holders))


def check_tracked(model, inputs, outputs):
    """Raise if ``call`` read a Variable that ``model`` does not own (the global generator
    of unseeded random draws, ``keras.random.normal(shape)``, belongs to no model)."""
    owned = {id(v) for v in model.weights} | {id(v) for v in model.state_variables}
    stop, seen, stack = set(map(id, _flatten(inputs))), set(), list(_flatten(outputs))
    while stack:
        var = stack.pop()
        if id(var) in seen or id(var) in stop or not hasattr(var, "op"):
            continue
        seen.add(id(var))
        if isinstance(var.op, Read) and id(var.op.variable) not in owned and \
                not is_global_state(var.op.variable):
            raise ValueError(
                f"Model {model.name!r} ({type(model).__name__}): call() used the weight "
                f"{var.op.variable.name!r}, which the model does not track, so it would never "
                f"be trained or saved. Create layers in __init__ and assign them to attributes "
                f"of the model (or to lists or dicts held by one), not inside call()")
        stack.extend(var.inputs)
