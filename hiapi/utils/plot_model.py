"""``plot_model`` and ``model_to_dot``: a model's layer graph as a Graphviz picture, as Keras 3.

Each layer is one node (a shared layer is one node with an edge from every tensor it is called
on), an op applied between layer outputs (``x + y``, ``ops.relu(x)``) is a node too, as Keras 3
draws its operation nodes, and each connection is one edge. A nested model is one node, or with
``expand_nested=True`` a dashed cluster of its own layers, wired input by input::

    hiapi.utils.plot_model(model, "model.png", show_shapes=True)
    hiapi.utils.model_to_dot(model).to_string()       # the DOT source, needs only pydot

pydot builds the graph (``pip install 'hiapi[plot]'``); writing an image also needs Graphviz's
``dot`` program (``apt-get install graphviz``). Both are optional: nothing else imports them.
"""
from __future__ import annotations

import html
import os
from typing import TYPE_CHECKING, Any, Literal

from hiapi.layers.layer import _flatten
from hiapi.runtime.atomic import atomic_write

if TYPE_CHECKING:
    from hiapi.models import Model

PYDOT_HINT = ("pip install 'hiapi[plot]'  (or: pip install pydot)")
GRAPHVIZ_HINT = "apt-get install graphviz  (macOS: brew install graphviz)"


def _pydot(caller):
    try:
        import pydot
    except ImportError:
        raise ImportError(f"{caller} needs pydot, which is not installed: {PYDOT_HINT}. "
                          f"Writing an image also needs Graphviz's `dot` program: "
                          f"{GRAPHVIZ_HINT}") from None
    return pydot


def _check_graphviz(pydot):
    """Run ``dot`` on an empty graph, as Keras does: pydot finds the program the same way
    when writing, so this is the check that predicts whether writing works."""
    try:
        pydot.Dot.create(pydot.Dot())
    except (OSError, pydot.PydotException) as error:
        raise ImportError(f"plot_model needs Graphviz's `dot` program to draw the graph, and "
                          f"running it failed ({error}): {GRAPHVIZ_HINT}. "
                          f"hiapi.utils.model_to_dot(model).to_string() gives the DOT source "
                          f"without it") from None


def _shape_text(shapes):
    text = lambda s: "?" if s is None else str(tuple(s))
    return text(shapes[0]) if len(shapes) == 1 else "[" + ", ".join(map(text, shapes)) + "]"


def _activation_name(layer):
    activation = getattr(layer, "activation", None)
    if activation is None:
        return None
    return getattr(activation, "name", None) or getattr(activation, "__name__", None) or \
        str(activation)


def _label(layer, inputs, outputs, options):
    """Keras 3's HTML-like table: "name (Class)", then activation, then shapes/dtype/trainable
    cells. ``inputs``/``outputs`` are the Vars of the call shown (None: unknown)."""
    class_name = type(getattr(layer, "op", layer)).__name__
    esc = lambda value: html.escape(str(value))
    cells = []
    if options["show_shapes"]:
        if class_name != "InputLayer":
            shapes = "?" if inputs is None else _shape_text([v.shape for v in inputs])
            cells.append(("white", "", f"Input shape: <b>{esc(shapes)}</b>"))
        shapes = "?" if outputs is None else _shape_text([v.shape for v in outputs])
        cells.append(("white", "", f"Output shape: <b>{esc(shapes)}</b>"))
    if options["show_dtype"]:
        dtype = "?" if outputs is None else ", ".join(str(v.dtype) for v in outputs)
        cells.append(("white", "", f"Output dtype: <b>{esc(dtype)}</b>"))
    if options["show_trainable"] and getattr(layer, "weights", None):
        cells.append(("forestgreen", ' color="white"', "<b>Trainable</b>") if layer.trainable
                     else ("firebrick", ' color="white"', "<b>Non-trainable</b>"))
    span = max(1, len(cells))
    title = (f"<b>{esc(layer.name)}</b> ({esc(class_name)})" if options["show_layer_names"]
             else f"<b>{esc(class_name)}</b>")
    rows = [f'<tr><td colspan="{span}" bgcolor="black"><font point-size="16" color="white">'
            f'{title}</font></td></tr>']
    activation = _activation_name(layer) if options["show_layer_activations"] else None
    if activation is not None:
        rows.append(f'<tr><td colspan="{span}" bgcolor="white"><font point-size="14">'
                    f'Activation: <b>{esc(activation)}</b></font></td></tr>')
    if cells:
        rows.append("<tr>" + "".join(f'<td bgcolor="{bg}"><font point-size="14"{color}>{text}'
                                     f'</font></td>' for bg, color, text in cells) + "</tr>")
    return ('<<table border="0" cellborder="1" bgcolor="black" cellpadding="10">'
            + "".join(rows) + "</table>>")


class _Builder:
    """Adds a model's nodes and edges to a pydot graph, one node per layer object."""

    def __init__(self, pydot, options):
        self.pydot, self.options = pydot, options
        self.node_ids, self.edges, self.expanded = {}, set(), {}

    def node(self, graph, layer, inputs, outputs):
        key = id(layer)
        if key not in self.node_ids:
            self.node_ids[key] = str(key)
            node = self.pydot.Node(str(key), label=_label(layer, inputs, outputs, self.options))
            node.set("fontname", "Helvetica")
            node.set("margin", "0")
            graph.add_node(node)
        return self.node_ids[key]

    def edge(self, graph, source, target):
        if (source, target) not in self.edges:
            self.edges.add((source, target))
            edge = self.pydot.Edge(source, target)
            edge.set("penwidth", "2")
            graph.add_edge(edge)

    def expand(self, graph, model):
        """A nested model as a cluster: (node ids fed by each input, node id of each output)."""
        if id(model) not in self.expanded:
            cluster = self.pydot.Cluster(graph_name=f"{model.name}_{id(model)}",
                                         label=model.name, style="dashed", labeljust="l")
            self.expanded[id(model)] = self.add_model(cluster, model)
            graph.add_subgraph(cluster)
        return self.expanded[id(model)]

    def wants_expansion(self, layer):
        from hiapi.models.functional import Model
        return self.options["expand_nested"] and isinstance(layer, Model) and \
            _kind(layer) != "subclassed"

    def add_model(self, graph, model):
        kind = _kind(model)
        if kind == "sequential":
            return self.add_sequential(graph, model)
        if kind == "functional":
            return self.add_functional(graph, model)
        only = self.node(graph, model, None, None)     # subclassed: one node, as Keras
        return [[only]], [only]

    def add_sequential(self, graph, model):
        """Keras draws no node for a Sequential's Input: the stack starts at its first layer."""
        entries, previous = None, None
        for layer in model.layers:
            if self.wants_expansion(layer):
                inner_entries, inner_exits = self.expand(graph, layer)
                targets, exit_id = inner_entries[0], inner_exits[0]
            else:
                node = getattr(layer, "_first_node", None)
                inputs, outputs = (None, None) if node is None else map(_flatten, node)
                exit_id = self.node(graph, layer, inputs, outputs)
                targets = [exit_id]
            if previous is None:
                entries = [targets]
            for target in targets:
                if previous is not None:
                    self.edge(graph, previous, target)
            previous = exit_id
        return entries or [[]], [previous]

    def add_functional(self, graph, model):
        producer = {}        # Var -> id of the node that outputs it
        for var in model.inputs:
            producer[var] = self.node(graph, var._keras_history[0], [], [var])
        entries = [[producer[var]] for var in model.inputs]
        for layer, call_inputs, call_outputs in model._nodes:
            inputs, outputs = _flatten(call_inputs), _flatten(call_outputs)
            if self.wants_expansion(layer):
                inner_entries, inner_exits = self.expand(graph, layer)
                for var, targets in zip(inputs, inner_entries):
                    for target in targets:
                        self.edge(graph, producer[var], target)
                producer.update(zip(outputs, inner_exits))
                continue
            target = self.node(graph, layer, inputs, outputs)
            for var in inputs:
                self.edge(graph, producer[var], target)
            producer.update((var, target) for var in outputs)
        return entries, [producer[var] for var in model.outputs]


def _kind(model):
    from hiapi.models.sequential import Sequential
    if isinstance(model, Sequential):
        return "sequential"
    return "functional" if getattr(model, "_nodes", None) is not None else "subclassed"


def model_to_dot(model: Model, show_shapes: bool = False, show_dtype: bool = False,
                 show_layer_names: bool = True, rankdir: Literal["TB", "LR"] = "TB",
                 expand_nested: bool = False, dpi: int = 200, subgraph: bool = False,
                 show_layer_activations: bool = False, show_trainable: bool = False,
                 **kwargs: Any) -> Any:
    """The model's graph as a ``pydot.Dot`` (a ``pydot.Cluster`` with ``subgraph=True``), as
    ``keras.utils.model_to_dot``; arguments as :func:`plot_model`. Needs pydot only::

        print(hiapi.utils.model_to_dot(model, show_shapes=True).to_string())
    """
    pydot = _pydot("model_to_dot")
    _check_arguments("model_to_dot", model, rankdir, kwargs)
    options = dict(show_shapes=show_shapes, show_dtype=show_dtype,
                   show_layer_names=show_layer_names, expand_nested=expand_nested,
                   show_layer_activations=show_layer_activations, show_trainable=show_trainable)
    if subgraph:
        dot = pydot.Cluster(graph_name=model.name, label=model.name, style="dashed",
                            labeljust="l")
    else:
        dot = pydot.Dot(graph_type="digraph", rankdir=rankdir, concentrate=True, dpi=dpi,
                        splines="ortho")
        dot.set_node_defaults(shape="plaintext")
    _Builder(pydot, options).add_model(dot, model)
    return dot


def _check_arguments(caller, model, rankdir, kwargs):
    if kwargs.pop("layer_range", None) is not None:
        raise ValueError(f"{caller}: argument `layer_range` is no longer supported (as in "
                         f"Keras 3)")
    if kwargs:
        raise ValueError(f"{caller}: unrecognized keyword arguments {sorted(kwargs)}")
    if rankdir not in ("TB", "LR"):
        raise ValueError(f"{caller}: rankdir must be 'TB' (vertical) or 'LR' (horizontal), "
                         f"got {rankdir!r}")
    if not getattr(model, "built", False):
        raise ValueError(f"{caller}: model {getattr(model, 'name', model)!r} has not been "
                         f"built yet, so it has no layer graph to draw: give it an Input, or "
                         f"call or fit it first")


def plot_model(model: Model, to_file: str | os.PathLike[str] = "model.png",
               show_shapes: bool = False, show_dtype: bool = False, show_layer_names: bool = True,
               rankdir: Literal["TB", "LR"] = "TB", expand_nested: bool = False, dpi: int = 200,
               show_layer_activations: bool = False, show_trainable: bool = False,
               **kwargs: Any) -> Any:
    """Draw the model's layer graph to ``to_file`` (format from the extension: ``.png``,
    ``.svg``, ``.pdf``, ``.dot``...; none means PNG), as ``keras.utils.plot_model``.

    ``show_shapes``/``show_dtype`` add each layer's input and output shapes / output dtype,
    ``show_layer_activations`` the activation, ``show_trainable`` whether its weights train;
    ``rankdir`` is "TB" (top to bottom) or "LR"; ``expand_nested`` draws nested models'
    layers. In a notebook (IPython installed) the image is returned for display::

        hiapi.utils.plot_model(model, "model.png", show_shapes=True)
    """
    pydot = _pydot("plot_model")
    _check_arguments("plot_model", model, rankdir, dict(kwargs))
    _check_graphviz(pydot)
    dot = model_to_dot(model, show_shapes=show_shapes, show_dtype=show_dtype,
                       show_layer_names=show_layer_names, rankdir=rankdir,
                       expand_nested=expand_nested, dpi=dpi,
                       show_layer_activations=show_layer_activations,
                       show_trainable=show_trainable, **kwargs)
    to_file = os.fspath(to_file)
    extension = os.path.splitext(to_file)[1][1:].lower() or "png"
    if extension not in dot.formats:      # else pydot prints dot's complaint, then asserts
        raise ValueError(f"plot_model: to_file={to_file!r} asks for the format {extension!r}, "
                         f"which Graphviz does not write; use one of "
                         f"{', '.join(sorted(dot.formats))}")
    image = dot.create(format=extension)      # fails before anything is written
    atomic_write(to_file, lambda handle: handle.write(image))
    if extension != "pdf":
        try:
            from IPython import display
        except ImportError:
            return None
        return display.Image(filename=to_file)
    return None
