"""The text of ``model.summary()``: one row per layer, then parameter totals (as in Keras)."""
import re

import numpy as np

from hiapi.layers.input_layer import InputLayer
from hiapi.models.summary_connections import connections, is_chain

_CONNECTED_GAP = "  "     # between the right-aligned parameter counts and the connections


def _shape_text(shape):
    if isinstance(shape, list):
        return ", ".join(_shape_text(s) for s in shape)
    if shape is None:
        return "?"
    return "(" + ", ".join("None" if d is None else str(d) for d in shape) + \
        ("," if len(shape) == 1 else "") + ")"


def _bytes_text(variables):
    n = sum(int(np.prod(v.shape)) * v.dtype.itemsize for v in variables)
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.2f} {unit}"
        n /= 1024


def _count(variables):
    return sum(int(np.prod(v.shape)) for v in variables)


def _free_batch(shape):
    """A shape with its batch axis shown as None (a custom step traced for a concrete
    batch size leaves that size in the layers' last output shapes)."""
    if isinstance(shape, list):
        return [_free_batch(s) for s in shape]
    if isinstance(shape, dict):
        return [_free_batch(shape[k]) for k in sorted(shape)]
    return shape if not shape else (None,) + tuple(shape[1:])


def _type_name(layer):
    """The class in a row: a model built from inputs and outputs is Keras's ``Functional``."""
    name = type(layer).__name__
    return "Functional" if name == "Model" and hasattr(layer, "_nodes") else name


def _layer_rows(layers, show_trainable, expand_nested, depth=0, free_batch=False,
                connected=None):
    rows = []
    for layer in layers:
        shape = layer.batch_shape if isinstance(layer, InputLayer) else \
            getattr(layer, "_output_shape", None)
        if free_batch and not isinstance(layer, InputLayer):
            shape = _free_batch(shape)
        # Keras: a layer not built yet (an unbuilt Sequential's) shows "?" and "0 (unbuilt)"
        row = ["  " * depth + f"{layer.name} ({_type_name(layer)})", _shape_text(shape),
               f"{_count(layer.weights):,}" if layer.built else "0 (unbuilt)"]
        if connected is not None:
            row.append(_CONNECTED_GAP + connected.get(id(layer), "-"))
        if show_trainable:
            row.append(("Y" if layer.trainable else "N") if layer.weights else "-")
        rows.append(row)
        inner = getattr(layer, "layers", None)
        if expand_nested and inner:
            rows += _layer_rows(inner, show_trainable, expand_nested, depth + 1, free_batch)
    return rows


def _in_range(layers, layer_range):
    """Keras's ``layer_range``: from the first layer whose name matches the first pattern to
    the first after it matching the second (both included)."""
    if layer_range is None:
        return layers
    if len(layer_range) != 2:
        raise ValueError(f"summary: layer_range must be 2 layer names, got {layer_range!r}")
    names = [layer.name for layer in layers]
    start = next((i for i, n in enumerate(names) if re.match(layer_range[0], n)), None)
    end = next((i for i, n in enumerate(names) if re.match(layer_range[1], n) and
                start is not None and i >= start), None)
    if start is None or end is None:
        raise ValueError(f"summary: layer_range {layer_range!r} does not match the layer names "
                         f"{names}")
    return layers[start:end + 1]


def _widths(rows, line_length, positions):
    """Column widths: Keras's ``positions`` (fractions of ``line_length`` or absolute ends),
    widened to fit the longest cell of each column."""
    positions = list(positions or [44 / 86, 72 / 86, 1.0])
    if len(positions) < len(rows[0]):
        positions += [positions[-1] + 10 / line_length * (k + 1) if positions[-1] <= 1 else
                      positions[-1] + 10 * (k + 1)
                      for k in range(len(rows[0]) - len(positions))]
    ends = [round(p * line_length) if p <= 1 else int(p) for p in positions]
    widths = [b - a for a, b in zip([0] + ends, ends)]
    return [max(w, max(len(r[c]) for r in rows) + (2 if c < 2 else 1))
            for c, w in enumerate(widths)]


def summary_text(model, line_length=None, positions=None, show_trainable=False,
                 layer_range=None, expand_nested=False):
    """The summary table with Keras's ``summary()`` arguments (a model not built yet lists its
    layers with unknown shapes and no parameters, as Keras does); columns widen to fit the longest
    layer name, class name and shape (Keras wraps long cells rather than cutting them; a wider
    column keeps one row per layer), so it is at least ``line_length`` (86) characters wide."""
    connected = None if is_chain(model) else connections(model)
    header = ["Layer (type)", "Output Shape", "Param #"] + \
        ([_CONNECTED_GAP + "Connected to"] if connected is not None else []) + \
        (["Trainable"] if show_trainable else [])
    specs = model.input_specs() if hasattr(model, "input_specs") else None
    rows = [header] + _layer_rows(_in_range(model.layers, layer_range), show_trainable,
                                  expand_nested, free_batch=bool(specs) and all(
                                      shape[:1] == (None,) for shape, _ in specs),
                                  connected=connected)
    if connected is not None:       # Keras's widths for this table: 108 wide, 4 columns
        line_length, positions = line_length or 108, positions or [0.3, 0.56, 0.74, 1.0]
    widths = _widths(rows, line_length or 86, positions)
    width = sum(widths)
    rule = lambda ch: ch * width
    left = {0, 1} | ({3} if connected is not None else set())
    row = lambda cells: "".join(f"{c:<{w}}" if i in left else f"{c:>{w}}"
                                for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
    lines = [f'Model: "{model.name}"', rule("━"), row(rows[0]), rule("━")]
    lines += [row(r) for r in rows[1:]]
    lines.append(rule("━"))
    trainable, frozen = model.trainable_weights, model.non_trainable_weights
    lines += [f" Total params: {_count(model.weights):,} ({_bytes_text(model.weights)})",
              f" Trainable params: {_count(trainable):,} ({_bytes_text(trainable)})",
              f" Non-trainable params: {_count(frozen):,} ({_bytes_text(frozen)})"]
    return "\n".join(lines)
