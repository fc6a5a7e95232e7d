"""Building the three compiled step functions (train, test, predict) from a compiled model.

Each is one ``Function``: inputs are placeholders for the model inputs (and targets, and the
learning rate for training); outputs are the total loss and the metrics' additive statistics;
the train step's updates are the optimizer's.
"""
import numpy as np

from hiapi.graph import Function, grad, placeholder
from hiapi.layers.layer import _flatten
from hiapi.layers.tracing import collect_state


def input_placeholders(model, xs):
    specs = model.input_specs()
    if specs is None:        # unbuilt subclassed model: shapes come from the data
        specs = [((None,) + a.shape[1:], "float32") for a in xs]
    return [placeholder(shape, dtype if np.dtype(dtype).kind == "f" or a.dtype.kind != "f"
                        else dtype, name=f"input_{i}")
            for i, ((shape, dtype), a) in enumerate(zip(specs, xs))]


def _targets(model, outputs, ys):
    if len(ys) != len(outputs):
        raise ValueError(f"Model {model.name!r} has {len(outputs)} outputs, got {len(ys)} "
                         f"target arrays")
    targets = []
    for i, (loss, out, y) in enumerate(zip(model.compiled_losses, outputs, ys)):
        shape = (None,) + y.shape[1:]
        loss.check_labels(shape, out.shape)
        dtype = loss.label_dtype or out.dtype
        targets.append(placeholder(shape, dtype, name=f"target_{i}"))
    return targets


def _loss_and_statistics(model, targets, outputs, extra_losses):
    total = None
    for loss, weight, y, out in zip(model.compiled_losses, model.loss_weights, targets, outputs):
        term = loss(y, out) if weight == 1.0 else weight * loss(y, out)
        total = term if total is None else total + term
    for term in extra_losses:            # regularization
        total = total + term
    model.build_metrics(targets, outputs)
    statistics = [s for metric, (y, out) in zip(model.compiled_metrics, model.metric_targets(
        targets, outputs)) for s in metric.statistics(y, out)]
    return total, statistics


def predict_function(model, xs):
    inputs = input_placeholders(model, xs)
    outputs = _flatten(model(inputs[0] if len(inputs) == 1 else inputs, training=False))
    return Function(inputs, outputs, name="predict_step")


def _trace(model, inputs, training):
    with collect_state() as state:
        outputs = _flatten(model(inputs[0] if len(inputs) == 1 else inputs, training=training))
    return outputs, state


def test_function(model, xs, ys):
    inputs = input_placeholders(model, xs)
    outputs, state = _trace(model, inputs, training=False)
    targets = _targets(model, outputs, ys)
    total, statistics = _loss_and_statistics(model, targets, outputs, state.losses)
    return Function(inputs + targets, [total] + statistics, name="test_step")


def train_function(model, xs, ys):
    inputs = input_placeholders(model, xs)
    outputs, state = _trace(model, inputs, training=True)
    targets = _targets(model, outputs, ys)
    total, statistics = _loss_and_statistics(model, targets, outputs, state.losses)
    params = model.trainable_weights
    if not params:
        raise ValueError(f"Model {model.name!r} has no trainable weights to train")
    gradients = grad(total, [v.read for v in params])
    updates = model.optimizer.get_updates(gradients, params) + state.updates
    return Function(inputs + targets + model.optimizer.step_inputs(), [total] + statistics,
                    updates,
                    name="train_step")
