"""The text of ``model.summary()``: one row per layer, then parameter totals (as in Keras)."""
import numpy as np

from hiapi.layers.input_layer import InputLayer


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


def summary_text(model, width=86):
    """The summary table; columns widen to fit the longest layer name, class name and shape
    (Keras wraps long cells rather than cutting them; a wider column keeps one row per
    layer), so the table is at least ``width`` characters wide."""
    if not model.built:
        raise ValueError(f"Model {model.name!r} has not been built yet, so it has no shapes "
                         f"or weights to show: give it an Input, or fit/call it first")
    rows = [("Layer (type)", "Output Shape", "Param #")]
    for layer in model.layers:
        shape = layer.batch_shape if isinstance(layer, InputLayer) else \
            getattr(layer, "_output_shape", None)
        rows.append((f"{layer.name} ({type(layer).__name__})", _shape_text(shape),
                     f"{_count(layer.weights):,}"))
    first = max(44, max(len(r[0]) for r in rows) + 2)
    second = max(28, max(len(r[1]) for r in rows) + 2)
    third = max(width - 44 - 28, max(len(r[2]) for r in rows) + 1)
    width = first + second + third
    rule = lambda ch: ch * width
    row = lambda a, b, c: f"{a:<{first}}{b:<{second}}{c:>{third}}"
    lines = [f'Model: "{model.name}"', rule("━"), row(*rows[0]), rule("━")]
    lines += [row(*r) for r in rows[1:]]
    lines.append(rule("━"))
    trainable, frozen = model.trainable_weights, model.non_trainable_weights
    lines += [f" Total params: {_count(model.weights):,} ({_bytes_text(model.weights)})",
              f" Trainable params: {_count(trainable):,} ({_bytes_text(trainable)})",
              f" Non-trainable params: {_count(frozen):,} ({_bytes_text(frozen)})"]
    return "\n".join(lines)
