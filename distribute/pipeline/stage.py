"""One pipeline stage's compiled programs: a contiguous run of a model's chain of layers.

- ``forward`` (every stage but the last): boundary activation in, boundary activation out.
- ``backward``: the stage's forward again (GPipe's re-materialisation: a stage keeps only the
  activation that *enters* it per micro-batch, not every intermediate one), then the gradient
  of ``sum(output * output_gradient)`` (a vector-Jacobian product) for the entering activation
  and the stage's parameters. The last stage's backward starts from the loss instead, scaled by
  the micro-batch's share of the global batch, and also returns the loss and metric outputs.
  Layers' state updates (batch-norm statistics, random-number counters) and regularisation
  losses live here, applied once per micro-batch.
- ``update``: the optimizer's step for the stage's parameters from accumulated gradients, so
  the optimizer builds slots for this stage's parameters only.

Each is an ordinary ``Function``, so every stage gets its own memory plan covering its own
layers only: the point of pipelining a model too big for one worker.
"""
import numpy as np

from hiapi.graph import Function, grad, ops, placeholder
from hiapi.layers.layer import _unique
from hiapi.layers.layer_io import not_a_node
from hiapi.layers.seeded import SeededLayer
from hiapi.graph.tracing import collect_state


class StagePrograms:
    def __init__(self, model, layers, index, stages, input_spec, targets=None, tensor=None):
        """``input_spec``: (shape with None batch, dtype) of the activation entering the stage.
        ``targets``: for the last stage, ``(compiled_targets, ys, weighted)``. ``tensor``:
        ``(TensorParallelRewrite, kernels, tables)`` to split the stage's layers over a tensor
        group as well (the boundary activations stay whole)."""
        self.index, self.layers = index, layers
        self.tensor, self.tensor_pairs = tensor, 0
        self.first, self.last = index == 0, index == stages - 1
        self.params = _unique(w for layer in layers for w in layer.trainable_weights)
        self.variables = _unique([w for layer in layers for w in layer.weights] +
                                 [v for layer in layers for v in layer.state_variables])
        self.counters = [layer.counter for layer in _walk(layers)
                         if isinstance(layer, SeededLayer) and layer.built]
        self.input_spec = input_spec
        self.backward = self._backward(model, targets)
        if not self.last:
            x = placeholder(*input_spec, name=f"stage{index}_input")
            y, _ = self._apply(x)
            # the backward's graph (with regularizers and state updates) chose what to split;
            # the forward splits exactly those weights
            (y,) = self._split([y], only_already_split=True)
            self.forward = Function([x], [y], name=f"pipeline_stage{index}_forward")
        self.train_params = [self._local(p) for p in self.params]

    def _split(self, roots, only_already_split=False):
        if self.tensor is None:
            return roots
        rewrite, kernels, tables = self.tensor
        if only_already_split:
            kernels = {k for k in kernels if k in rewrite.slices}
            tables = {t for t in tables if t in rewrite.slices}
            return rewrite.apply(roots, kernels, tables)[0]
        roots, self.tensor_pairs = rewrite.apply(roots, kernels, tables)
        return roots

    def _local(self, variable):
        """The Variable this rank trains for ``variable``: its slice when the tensor rewrite
        split it."""
        entry = self.tensor[0].slices.get(id(variable)) if self.tensor else None
        return entry[1] if entry else variable

    def _apply(self, x):
        with collect_state() as state, not_a_node():
            y = x
            for layer in self.layers:
                y = layer(y, training=True)
        return y, state

    def _wrt(self, x):
        """What the backward differentiates for: the entering activation (not on the first
        stage, whose input is data) and the parameters."""
        self.sends_gradient = not self.first and np.dtype(x.dtype).kind == "f"
        return ([x] if self.sends_gradient else []) + [self._local(p).read
                                                       for p in self.params]

    def _backward(self, model, targets):
        x = placeholder(*self.input_spec, name=f"stage{self.index}_input")
        scale = placeholder((), "float32", name="micro_batch_share")
        y, state = self._apply(x)
        self.output_spec = (tuple(y.shape), y.dtype)       # what goes to the next stage, whole
        updated = [value for _, value in state.updates]
        if self.last:
            compiled, ys, weighted = targets
            targeted, weights = compiled.placeholders([y], ys, weighted)
            results = compiled.build(targeted, [y], weights, state.losses)
            split = self._split(results + updated)
            results, updated = split[:len(results)], split[len(results):]
            self.result_count = len(results)
            objective = results[0] * ops.cast(scale, results[0].dtype)
            feeds = [x] + targeted + (weights if weighted else []) + [scale]
            outputs = results
        else:
            g = placeholder(tuple(y.shape), y.dtype, name=f"stage{self.index}_output_gradient")
            split = self._split([y] + list(state.losses) + updated)
            y, losses, updated = split[0], split[1:1 + len(state.losses)], \
                split[1 + len(state.losses):]
            objective = ops.sum(y * g)
            regularization = ops.constant(0.0, objective.dtype)
            for term in losses:
                regularization = regularization + ops.cast(term, objective.dtype)
            regularization = regularization * ops.cast(scale, objective.dtype)
            objective = objective + regularization
            feeds, outputs = [x, g, scale], [regularization]
        wrt = self._wrt(x)
        gradients = [g if g is not None else ops.constant(np.zeros(
            tuple(d or 0 for d in w.shape), w.dtype)) for g, w in zip(grad(objective, wrt), wrt)]
        updates = [(variable, value) for (variable, _), value in zip(state.updates, updated)]
        return Function(feeds, outputs + gradients, updates,
                        name=f"pipeline_stage{self.index}_backward",
                        recompute=getattr(model, "_recompute", None),   # memory_budget per stage
                        forward_outputs=len(outputs))

    def build_update(self, optimizer):
        gradients = [placeholder(p.shape, p.dtype, name=f"{p.name}/accumulated_gradient")
                     for p in self.train_params]
        updates = optimizer.get_updates(gradients, self.train_params)
        self.update = Function(gradients + optimizer.step_inputs(), [], updates,
                               name=f"pipeline_stage{self.index}_update")

    def set_counters(self, value_of):
        for counter in self.counters:
            counter.assign(np.asarray(value_of(counter), counter.dtype))


def _walk(layers):
    for layer in layers:
        yield layer
        yield from _walk(getattr(layer, "_sublayers", ()))
