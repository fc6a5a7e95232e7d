"""The layers a pipeline cuts between: a model's layers as one chain.

A stage is a contiguous run of layers applied one after the other (``stage.py``), so a model
can be pipelined when its layers form a chain: a Sequential model's stack, or a functional
``hiapi.Model(inputs, outputs)`` with one input and one output in which every layer call takes
the previous call's output (the first takes the input) and no layer is called twice. Anything
else (a residual add, a layer with two inputs, a shared layer, raw ops between layers) fails
here with what is unsupported and where, rather than computing something else.
"""
from hiapi.graph.var import Var
from hiapi.layers.layer import Layer


def chain_layers(model):
    """The model's layers in order, or a NotImplementedError saying why they are no chain."""
    stack = getattr(model, "_stack", None)
    if stack is not None:
        return list(stack)
    nodes = getattr(model, "_nodes", None)
    if nodes is None:
        raise NotImplementedError(
            f"Strategy(pipeline_stages=...): model {model.name!r} is a subclassed "
            f"{type(model).__name__} (its call() is Python); pipelines cut Sequential models "
            f"and functional models whose layers form one chain")
    what = f"Strategy(pipeline_stages=...): functional model {model.name!r}"
    if len(model.inputs) != 1 or len(model.outputs) != 1:
        raise NotImplementedError(f"{what} has {len(model.inputs)} inputs and "
                                  f"{len(model.outputs)} outputs; a pipeline cuts a chain from "
                                  f"one input to one output")
    layers, previous = [], model.inputs[0]
    for layer, inputs, outputs in nodes:
        name = getattr(layer, "name", type(layer).__name__)
        if not isinstance(layer, Layer):
            raise NotImplementedError(f"{what}: {name!r} is an op between layers, not a "
                                      f"layer; wrap it in a layers.Lambda so a stage can hold it")
        if not isinstance(inputs, Var) or inputs is not previous:
            got = "several inputs" if not isinstance(inputs, Var) else \
                "an output other than the previous layer's"
            raise NotImplementedError(f"{what}: layer {name!r} takes {got}; its layers do not "
                                      f"form one chain (each layer's one input the previous "
                                      f"layer's output), which a pipeline needs")
        if any(layer is seen for seen in layers):
            raise NotImplementedError(f"{what}: layer {name!r} is called twice (shared "
                                      f"weights); a pipeline gives each layer one stage")
        if not isinstance(outputs, Var):
            raise NotImplementedError(f"{what}: layer {name!r} returns several outputs; a "
                                      f"pipeline stage passes one activation on")
        layers.append(layer)
        previous = outputs
    if previous is not model.outputs[0]:
        raise NotImplementedError(f"{what}: its output is not the last layer's output")
    return layers
