"""The "Connected to" column of ``summary()``, which Keras 3 adds for a functional model that
is not a plain chain of layers: several inputs or outputs, a layer taking several tensors
(``add``, ``concatenate``), a branch, or a layer called twice. Each row then names the tensors
the layer was called on as ``layer[call][tensor]``, Keras's ``keras_history`` (``img[0][0]``,
``conv2d_11[0][0], max_pooling2d_2[0][0]``), which a chain's order already shows.

A call index counts the calls of that layer in this model.
"""
from hiapi.layers.layer import _flatten


def is_chain(model):
    """Keras's ``sequential_like``: one input, one output, and each layer called once on the
    previous call's single output. Sequential and subclassed models count as chains."""
    nodes = getattr(model, "_nodes", None)
    if nodes is None:
        return True
    if len(model.inputs) != 1 or len(model.outputs) != 1:
        return False
    previous, seen = model.inputs[0], set()
    for layer, call_inputs, call_outputs in nodes:
        flat_inputs, flat_outputs = _flatten(call_inputs), _flatten(call_outputs)
        if id(layer) in seen or len(flat_inputs) != 1 or flat_inputs[0] is not previous:
            return False
        seen.add(id(layer))
        previous = flat_outputs[0] if len(flat_outputs) == 1 else None
    return True


def connections(model):
    """``{id(layer): "a[0][0], b[0][0]"}`` for every layer called in ``model`` (all its calls
    there, in order); the model's inputs' layers are absent (Keras prints "-")."""
    sources = {id(var): f"{var._keras_history[0].name}[0][0]" for var in model.inputs}
    calls, text = {}, {}
    for layer, call_inputs, call_outputs in model._nodes:
        index = calls[id(layer)] = calls.get(id(layer), -1) + 1
        names = ", ".join(sources.get(id(var), "?") for var in _flatten(call_inputs))
        text[id(layer)] = f"{text[id(layer)]}, {names}" if id(layer) in text else names
        for k, var in enumerate(_flatten(call_outputs)):
            sources[id(var)] = f"{layer.name}[{index}][{k}]"
    return text
