"""``GradientTape``: tf.GradientTape's interface over hiapi's graph autodiff.

hiapi compiles a custom ``train_step`` (or a ``hiapi.function``) by tracing it into a graph,
so everything computed under the tape is already recorded as graph ops: ``tape.gradient``
appends the backward ops (``hiapi.graph.grad``) to that graph, and the step that applies
them is compiled once and runs on every backend. Under a data-parallel Strategy, the
optimizer averages the gradients over workers before it applies them (as Horovod's
``DistributedGradientTape``)::

    with hiapi.GradientTape() as tape:
        y_pred = self(x, training=True)
        loss = self.compute_loss(y=y, y_pred=y_pred)
    grads = tape.gradient(loss, self.trainable_variables)
    self.optimizer.apply(grads, self.trainable_variables)

Sources may be Variables, symbolic tensors, or lists, tuples and dicts of them; the result
has the same structure, with None (or zeros, ``unconnected_gradients="zero"``) where the
target does not depend on a source. Values computed in ``with tape.stop_recording():`` are
constants to the tape.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any

from hiapi.graph import ops, var as var_module
from hiapi.graph.autodiff import grad
from hiapi.graph.op import as_var
from hiapi.graph.var import Var
from hiapi.graph.variable import Variable


class GradientTape:
    def __init__(self, persistent: bool = False, watch_accessed_variables: bool = True) -> None:
        self.persistent = persistent
        self.watch_accessed_variables = watch_accessed_variables
        self._watched: list[Any] = []
        self._stopped: set[Var] = set()
        self._used = False
        self._recording = False

    def __enter__(self) -> GradientTape:
        self._recording = True
        return self

    def __exit__(self, *exc: Any) -> None:
        self._recording = False

    def watch(self, tensor: Any) -> None:
        """Record gradients with respect to ``tensor`` (every symbolic value is differentiable
        here, so this only checks that it is one)."""
        for leaf in _leaves(tensor):
            _as_source(leaf, "watch")
            self._watched.append(leaf)

    def watched_variables(self) -> list[Any]:
        return list(self._watched)

    @contextmanager
    def stop_recording(self):
        """Ops built in this block are not differentiated through."""
        made: list[Var] = []
        var_module._watchers.append(made)
        try:
            yield
        finally:
            var_module._watchers.remove(made)
            self._stopped.update(made)

    def reset(self) -> None:
        self._stopped.clear()
        self._watched.clear()

    def gradient(self, target: Any, sources: Any, output_gradients: Any = None,
                 unconnected_gradients: str = "none") -> Any:
        """d target / d sources, in the structure of ``sources``. As in tf.GradientTape, a
        target that is not a scalar (a per-sample loss), or a list of targets, stands for the
        sum of its elements; ``output_gradients`` gives the vector to multiply the Jacobian by
        instead."""
        if self._used and not self.persistent:
            raise RuntimeError("GradientTape.gradient can only be called once on a "
                               "non-persistent tape; create it with persistent=True to take "
                               "several gradients")
        if unconnected_gradients not in ("none", "zero"):
            raise ValueError(f"GradientTape.gradient: unconnected_gradients must be 'none' or "
                             f"'zero', got {unconnected_gradients!r}")
        self._used = True
        total = _target(target, output_gradients)
        leaves = _leaves(sources)
        points = [_as_source(leaf, "gradient") for leaf in leaves]
        grads = grad(total, points, stop=self._stopped)
        if not self.watch_accessed_variables:     # only what was watched has a gradient
            watched = {id(_as_source(leaf, "watch")) for leaf in self._watched}
            grads = [g if id(p) in watched else None for g, p in zip(grads, points)]
        if unconnected_gradients == "zero":
            grads = [ops.broadcast_like(ops.constant(0.0, p.dtype), p) if g is None else g
                     for g, p in zip(grads, points)]
        return _rebuild(sources, iter(grads))

    def jacobian(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("GradientTape.jacobian is not supported; take gradient() of "
                                  "each output element, or use output_gradients for a "
                                  "vector-Jacobian product")


def _target(target, output_gradients):
    targets = _leaves(target)
    for t in targets:
        if not isinstance(t, (Var, Variable)):
            raise TypeError(f"GradientTape.gradient: the target must be a symbolic tensor "
                            f"computed in a traced step (a train_step, or a function "
                            f"decorated with @hiapi.function), got {type(t).__name__}; hiapi "
                            f"records gradients by compiling the step, not eagerly")
    targets = [t.read if isinstance(t, Variable) else t for t in targets]
    if output_gradients is not None:
        weights = [ops.cast(as_var(w), t.dtype)
                   for w, t in zip(_leaves(output_gradients), targets)]
        targets = [ops.sum(t * w) for t, w in zip(targets, weights)]
    # tf.GradientTape's rule: a target that is not a scalar stands for the sum of its elements.
    # Keras's guides rely on it (``tape.gradient(keras.losses.mean_squared_error(y, y_pred),
    # ...)`` takes a per-sample loss).
    targets = [t if t.ndim == 0 else ops.sum(t) for t in targets]
    total = targets[0]
    for t in targets[1:]:
        total = total + t
    return total


def _as_source(leaf, what):
    if isinstance(leaf, Variable):
        return leaf.read
    if isinstance(leaf, Var):
        return leaf
    raise TypeError(f"GradientTape.{what}: sources must be Variables or symbolic tensors, "
                    f"got {type(leaf).__name__}")


def _leaves(structure):
    if isinstance(structure, (list, tuple)):
        return [leaf for item in structure for leaf in _leaves(item)]
    if isinstance(structure, dict):
        return [leaf for key in sorted(structure) for leaf in _leaves(structure[key])]
    return [structure]


def _rebuild(structure, values):
    if isinstance(structure, (list, tuple)):
        items = [_rebuild(item, values) for item in structure]
        return items if isinstance(structure, list) else tuple(items)
    if isinstance(structure, dict):
        rebuilt = {key: _rebuild(structure[key], values) for key in sorted(structure)}
        return {key: rebuilt[key] for key in structure}
    return next(values)
