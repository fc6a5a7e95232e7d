"""Building the three compiled step functions (train, test, predict) from a compiled model.

Each is one ``Function``. Its inputs are placeholders for the model inputs, the targets, the
sample weights (when given) and, for training, the optimizer's per-step inputs (learning rate,
update number); its outputs are the losses and the metrics' additive statistics
(``CompiledTargets.build``); the train step's updates are the optimizer's and the layers'
(batch-norm statistics, random-number counters, ``assign_add`` in a layer's ``call``). The test
and predict steps apply the layers' updates too, as Keras does: a layer keeping a running total
counts what it is called on in any mode (the built-in layers update only in training). Each
picks its thread count for the load from its own call times (``tuned=True``:
``hiapi.runtime.thread_tuner``), whoever calls it.
"""
import warnings

from hiapi.graph import Function, grad, placeholder
from hiapi.layers.layer import _flatten
from hiapi.layers.layer_io import not_a_node
from hiapi.graph.tracing import collect_state
from hiapi.graph.ops.deferred import Deferred
from hiapi.graph.schedule import topological_order


def input_placeholders(model, xs, by_length=False):
    """One placeholder per model input; ``by_length``: the axes past the batch that the model
    leaves open (``Input(shape=(None, 8))``: a sequence of any length) take the data's sizes."""
    specs = model.input_specs()
    if specs is None:        # unbuilt subclassed model: shapes come from the data
        specs = [((None,) + a.shape[1:], "float32") for a in xs]
    return [placeholder(shape[:1] + tuple(d if d is not None or not by_length
                                          else a.shape[k + 1]
                                          for k, d in enumerate(shape[1:])),
                        dtype, name=f"input_{i}")
            for i, ((shape, dtype), a) in enumerate(zip(specs, xs))]


def _traced(model, xs, training):
    """(placeholders, outputs, state) of the model traced for ``xs``. Axes the model leaves
    open stay open (one compiled graph serves every size), unless a layer needs their sizes
    (a recurrent layer unrolled over a sequence of unknown length gives ``Deferred``
    outputs): then it is traced again for the data's sizes, and the model's step functions
    are kept per size from then on (``by_length``)."""
    by_length = getattr(model, "_steps_by_length", False)
    inputs = input_placeholders(model, xs, by_length)
    outputs, state = _trace(model, inputs, training)
    if not by_length and any(isinstance(v.op, Deferred) for v in topological_order(outputs)):
        model._steps_by_length = True
        inputs = input_placeholders(model, xs, by_length=True)
        outputs, state = _trace(model, inputs, training)
    return inputs, outputs, state


def by_length(model, xs):
    """The part of a step function's key that the data's sizes along open axes make (empty
    unless the model is traced per size, see ``_traced``)."""
    return tuple(open_axes(model, xs)) if getattr(model, "_steps_by_length", False) else ()


def open_axes(model, xs):
    """The data's sizes along the axes past the batch that the model's inputs leave open
    (``None``): part of a step function's identity, as they are fixed in its graph."""
    specs = model.input_specs() or []
    return [(i, k, a.shape[k + 1]) for i, ((shape, _), a) in enumerate(zip(specs, xs))
            for k, d in enumerate(shape[1:]) if d is None and len(a.shape) > k + 1]


def _trace(model, inputs, training):
    with collect_state() as state, not_a_node():
        structure = model(model.structure_inputs(inputs), training=training)
        model.learn_outputs(structure)
        outputs = _flatten(structure)
    return outputs, state


def _loss_graph(model, xs, ys, weighted, training):
    inputs, outputs, state = _traced(model, xs, training)
    compiled = model.compiled_targets(outputs)
    targets, weights = compiled.placeholders(outputs, ys, weighted)
    results = compiled.build(targets, outputs, weights, state.losses)
    feeds = inputs + targets + (weights if weighted else [])
    return feeds, results, state


def predict_function(model, xs):
    inputs, outputs, state = _traced(model, xs, training=False)
    return Function(inputs, outputs, state.updates, name="predict_step", tuned=True)


def test_function(model, xs, ys, weighted=False):
    feeds, results, state = _loss_graph(model, xs, ys, weighted, training=False)
    return Function(feeds, results, state.updates, name="test_step", tuned=True)


def train_function(model, xs, ys, weighted=False):
    feeds, results, state = _loss_graph(model, xs, ys, weighted, training=True)
    params, plan = model.trainable_weights, model.distribution
    if params:
        # LossScaleOptimizer: gradients of the scaled loss (unscaled again in its updates)
        gradients = grad(model.optimizer.scale_loss(results[0]), [v.read for v in params])
        # averages gradients over workers (a graph rewrite)
        gradients = plan.reduce_gradients(gradients, params, model.optimizer)
        updates = plan.get_updates(model.optimizer, gradients, params) + state.updates
    else:                  # Keras trains it all the same: the layers' state and the metrics
        warnings.warn(f"Model {model.name!r} has no trainable weights: fit updates only its "
                      f"layers' state and the metrics", stacklevel=2)
        updates = state.updates
    return Function(feeds + model.optimizer.step_inputs() + plan.step_inputs(), results,
                    updates, name="train_step", recompute=getattr(model, "_recompute", None),
                    forward_outputs=len(results), tuned=True)
