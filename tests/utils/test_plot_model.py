"""plot_model / model_to_dot: one node per layer with its name and shapes, one edge per
connection (read back from the DOT source, which needs only pydot); images when Graphviz's
``dot`` exists; the errors that name the missing extra."""
import re
import shutil
import sys

import pytest

import hiapi
from hiapi import layers

try:
    import pydot  # noqa: F401  (only whether it imports matters)
    HAVE_PYDOT = True
except ImportError:
    HAVE_PYDOT = False
needs_pydot = pytest.mark.skipif(not HAVE_PYDOT,
                                 reason="pydot is not installed (pip install 'hiapi[plot]')")

NODE = re.compile(r"^(\d+) \[label=<(.*)>, ", re.M)
EDGE = re.compile(r"^(\d+) -> (\d+)", re.M)
TITLE = re.compile(r"<b>([^<]*)</b> \(([^)]*)\)")


def parse(dot):
    """(nodes {name: (class, label)}, edges {(source name, target name)}) of the DOT text."""
    text = dot.to_string()
    labels = dict(NODE.findall(text))
    names = {key: TITLE.search(label).groups() for key, label in labels.items()}
    nodes = {name: (cls, labels[key]) for key, (name, cls) in names.items()}
    assert len(nodes) == len(labels), "two nodes share a name"
    edges = [(names[a][0], names[b][0]) for a, b in EDGE.findall(text)]
    assert len(edges) == len(set(edges)), "an edge is drawn twice"
    return nodes, set(edges)


def mlp():
    return hiapi.Sequential([hiapi.Input((28, 28), name="pixels"), layers.Flatten(name="flat"),
                             layers.Dense(16, activation="relu", name="hidden"),
                             layers.Dense(10, activation="softmax", name="out")], name="mlp")


def two_towers():
    """Two inputs, a layer shared by both, a raw op node and two outputs."""
    left, right = hiapi.Input((8,), name="left"), hiapi.Input((8,), name="right")
    shared = layers.Dense(4, activation="relu", name="shared")
    joined = layers.Concatenate(name="joined")([shared(left), shared(right)])
    mixed = joined + layers.Dense(8, name="residual")(joined)
    return hiapi.Model([left, right], [layers.Dense(1, name="score")(mixed),
                                       layers.Dense(3, name="kind")(joined)], name="towers")


@needs_pydot
def test_sequential_is_a_chain_of_its_layers_without_the_input_as_keras():
    nodes, edges = parse(hiapi.utils.model_to_dot(mlp(), show_shapes=True))
    assert {name: cls for name, (cls, _) in nodes.items()} == {
        "flat": "Flatten", "hidden": "Dense", "out": "Dense"}
    assert edges == {("flat", "hidden"), ("hidden", "out")}
    assert "Input shape: <b>(None, 28, 28)</b>" in nodes["flat"][1]
    assert "Output shape: <b>(None, 784)</b>" in nodes["flat"][1]
    assert "Output shape: <b>(None, 10)</b>" in nodes["out"][1]


@needs_pydot
def test_functional_several_inputs_outputs_shared_layer_and_op_node():
    nodes, edges = parse(hiapi.utils.model_to_dot(two_towers(), show_shapes=True))
    assert {name: cls for name, (cls, _) in nodes.items()} == {
        "left": "InputLayer", "right": "InputLayer", "shared": "Dense",
        "joined": "Concatenate", "residual": "Dense", "add": "Add", "score": "Dense",
        "kind": "Dense"}
    assert edges == {("left", "shared"), ("right", "shared"), ("shared", "joined"),
                     ("joined", "residual"), ("joined", "add"), ("residual", "add"),
                     ("add", "score"), ("joined", "kind")}
    assert "Input shape" not in nodes["left"][1]           # an input shows its output only
    assert "Output shape: <b>(None, 8)</b>" in nodes["left"][1]
    assert "Input shape: <b>[(None, 4), (None, 4)]</b>" in nodes["joined"][1]


@needs_pydot
def test_label_options_activation_dtype_trainable_and_names():
    model = mlp()
    model.get_layer("hidden").trainable = False
    dot = hiapi.utils.model_to_dot(model, show_dtype=True, show_layer_activations=True,
                                   show_trainable=True)
    nodes, _ = parse(dot)
    assert "Activation: <b>relu</b>" in nodes["hidden"][1]
    assert "Activation: <b>softmax</b>" in nodes["out"][1]
    assert "Output dtype: <b>float32</b>" in nodes["out"][1]
    assert "Non-trainable" in nodes["hidden"][1] and ">Trainable<" in nodes["out"][1]
    assert "Trainable" not in nodes["flat"][1]             # no weights, nothing to say
    assert "Input shape" not in nodes["out"][1]            # show_shapes=False
    text = hiapi.utils.model_to_dot(model, show_layer_names=False, rankdir="LR").to_string()
    assert "hidden" not in text and "<b>Dense</b>" in text and "rankdir=LR" in text


def nested():
    inner = hiapi.Sequential([hiapi.Input((8,)), layers.Dense(6, name="in_a"),
                              layers.Dense(2, name="in_b")], name="inner")
    x = hiapi.Input((8,), name="x")
    return hiapi.Model(x, layers.Dense(1, name="head")(inner(layers.Dense(8, name="pre")(x))))


@needs_pydot
def test_nested_model_is_one_node_or_an_expanded_cluster():
    nodes, edges = parse(hiapi.utils.model_to_dot(nested(), show_shapes=True))
    assert nodes["inner"][0] == "Sequential" and "Output shape: <b>(None, 2)</b>" in \
        nodes["inner"][1]
    assert edges == {("x", "pre"), ("pre", "inner"), ("inner", "head")}
    dot = hiapi.utils.model_to_dot(nested(), expand_nested=True)
    nodes, edges = parse(dot)
    assert set(nodes) == {"x", "pre", "in_a", "in_b", "head"}
    assert edges == {("x", "pre"), ("pre", "in_a"), ("in_a", "in_b"), ("in_b", "head")}
    assert "subgraph cluster_inner" in dot.to_string()


@needs_pydot
def test_expanded_functional_submodel_is_wired_input_by_input():
    a, b = hiapi.Input((3,), name="a"), hiapi.Input((5,), name="b")
    pair = hiapi.Model([a, b], [layers.Dense(2, name="fa")(a), layers.Dense(2, name="fb")(b)],
                       name="pair")
    p, q = hiapi.Input((3,), name="p"), hiapi.Input((5,), name="q")
    first, second = pair([p, q])
    outer = hiapi.Model([p, q], layers.Subtract(name="diff")([second, first]))
    nodes, edges = parse(hiapi.utils.model_to_dot(outer, expand_nested=True))
    assert set(nodes) == {"p", "q", "a", "b", "fa", "fb", "diff"}
    assert edges == {("p", "a"), ("q", "b"), ("a", "fa"), ("b", "fb"), ("fa", "diff"),
                     ("fb", "diff")}


@needs_pydot
def test_subclassed_model_is_one_node():
    class Tiny(hiapi.Model):
        def __init__(self):
            super().__init__(name="tiny")
            self.dense = layers.Dense(2)

        def call(self, inputs, training=None):
            return self.dense(inputs)

    model = Tiny()
    model.built = True
    nodes, edges = parse(hiapi.utils.model_to_dot(model))
    assert set(nodes) == {"tiny"} and not edges


@needs_pydot
def test_bad_arguments_and_unbuilt_model_are_named():
    with pytest.raises(ValueError, match="not been built"):
        hiapi.utils.model_to_dot(hiapi.Sequential([layers.Dense(2)], name="later"))
    with pytest.raises(ValueError, match="rankdir must be 'TB'.*got 'BT'"):
        hiapi.utils.model_to_dot(mlp(), rankdir="BT")
    with pytest.raises(ValueError, match="layer_range"):
        hiapi.utils.plot_model(mlp(), layer_range=["flat", "out"])
    with pytest.raises(ValueError, match="unrecognized keyword arguments \\['colour'\\]"):
        hiapi.utils.model_to_dot(mlp(), colour="red")


def test_missing_pydot_names_the_extra_and_graphviz(monkeypatch):
    monkeypatch.setitem(sys.modules, "pydot", None)        # import pydot now fails
    for function in (hiapi.utils.plot_model, hiapi.utils.model_to_dot):
        with pytest.raises(ImportError) as error:
            function(mlp())
        assert "pip install 'hiapi[plot]'" in str(error.value)
        assert "apt-get install graphviz" in str(error.value)


@needs_pydot
def test_missing_dot_program_names_the_apt_package(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))               # no `dot` to be found
    with pytest.raises(ImportError, match="apt-get install graphviz"):
        hiapi.utils.plot_model(mlp(), to_file=tmp_path / "model.png")
    assert list(tmp_path.iterdir()) == []


@needs_pydot
@pytest.mark.skipif(shutil.which("dot") is None,
                    reason="Graphviz's `dot` program is not installed (apt-get install graphviz)")
def test_plot_model_writes_png_and_svg(tmp_path):
    png = tmp_path / "model.png"
    hiapi.utils.plot_model(two_towers(), to_file=png, show_shapes=True)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg = tmp_path / "nested.svg"
    hiapi.utils.plot_model(nested(), to_file=str(svg), expand_nested=True, rankdir="LR")
    text = svg.read_text()
    assert text.lstrip().startswith(("<?xml", "<svg")) and "in_a" in text and "pre" in text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.png", "nested.svg"]


@needs_pydot
@pytest.mark.skipif(shutil.which("dot") is None,
                    reason="Graphviz's `dot` program is not installed (apt-get install graphviz)")
def test_unknown_image_format_is_a_named_error(tmp_path):
    with pytest.raises(ValueError, match=r"plot_model: to_file=.*model\.xyz.* format 'xyz', "
                                         r"which Graphviz does not write; use one of .*png"):
        hiapi.utils.plot_model(mlp(), to_file=tmp_path / "model.xyz")
    assert list(tmp_path.iterdir()) == []
