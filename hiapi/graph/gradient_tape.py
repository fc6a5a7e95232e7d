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

Opened outside a traced step, as TensorFlow's eager loops do, the tape traces its block
and ``gradient`` compiles and runs it (``hiapi.graph.eager_tape``): the gradients come back
as numpy arrays, and the tensors the block made (the loss, the model's outputs) hold their
values.

Sources may be Variables, symbolic tensors, or lists, tuples and dicts of them (and, on an
eager tape, the arrays the block took as inputs); the result has the same structure, with
None (or zeros, ``unconnected_gradients="zero"``) where the target does not depend on a
source. Values computed in ``with tape.stop_recording():`` are constants to the tape.
"""
from __future__ import annotations

import weakref
from contextlib import contextmanager
from typing import Any

import numpy as np

from hiapi.graph import eager_tape, ops, step_recording, tracing, var as var_module
from hiapi.graph.autodiff import grad
from hiapi.graph.eager_tape import release
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
        self._session: eager_tape.EagerSession | None = None

    def __enter__(self) -> GradientTape:
        self._recording = True
        if not tracing.in_trace() and step_recording.active() is None:
            self._session = eager_tape.EagerSession()    # eager: trace the block
            self._session.start()
            if self.persistent:       # its values lose their history when the tape goes
                weakref.finalize(self, self._session.release)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._recording = False
        if self._session is not None:
            self._session.stop()

    def watch(self, tensor: Any) -> None:
        """Record gradients with respect to ``tensor`` (every symbolic value is differentiable
        here, so this only checks that it is one)."""
        for leaf in _leaves(tensor):
            self._as_source(leaf, "watch")
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
        self._begin("gradient", unconnected_gradients)
        total = _target(target, output_gradients, eager=self._session is not None)
        rows, _ = self._gradients([total], sources, unconnected_gradients)
        return _rebuild(sources, iter(rows[0]))

    def jacobian(self, target: Any, sources: Any, unconnected_gradients: str = "none",
                 parallel_iterations: Any = None, experimental_use_pfor: bool = True) -> Any:
        """tf.GradientTape.jacobian: for each source, the derivative of every element of
        ``target`` with respect to every element of the source, shaped ``target.shape +
        source.shape``, in the structure of ``sources``. Built from one gradient per element
        of the target (its shape must be known), compiled together: meant for targets of up
        to a few hundred elements (TensorFlow vectorises it instead)."""
        self._begin("jacobian", unconnected_gradients)
        target = _one_target(target, "jacobian", eager=self._session is not None)
        if any(d is None for d in target.shape):
            raise ValueError(f"GradientTape.jacobian: the target's shape {target.shape} must "
                             f"be known (use batch_jacobian for a batch axis)")
        size = int(np.prod(target.shape, dtype=np.int64))
        flat = ops.reshape(target, (size,))
        rows, points = self._gradients([ops.getitem(flat, i) for i in range(size)], sources,
                                       unconnected_gradients)
        jacobians = [self._stacked([row[k] for row in rows], 0, target.shape, point.shape)
                     for k, point in enumerate(points)]
        return _rebuild(sources, iter(jacobians))

    def batch_jacobian(self, target: Any, source: Any, unconnected_gradients: str = "none",
                       parallel_iterations: Any = None,
                       experimental_use_pfor: bool = True) -> Any:
        """tf.GradientTape.batch_jacobian: for ``target`` of shape ``(batch, *y)`` and
        ``source`` of shape ``(batch, *x)`` whose samples do not mix, each sample's Jacobian,
        shaped ``(batch, *y, *x)``. One gradient per element of a sample's target."""
        self._begin("batch_jacobian", unconnected_gradients)
        target = _one_target(target, "batch_jacobian", eager=self._session is not None)
        point = self._as_source(source, "batch_jacobian")
        if target.ndim < 1 or point.ndim < 1 or any(d is None for d in target.shape[1:]):
            raise ValueError(f"GradientTape.batch_jacobian: target and source need a batch "
                             f"axis first and the target's other axes known; got shapes "
                             f"{target.shape} and {point.shape}")
        size = int(np.prod(target.shape[1:], dtype=np.int64))
        per_sample = ops.reshape(target, (-1, size))
        totals = [ops.sum(ops.slice_axis(per_sample, 1, j, j + 1)) for j in range(size)]
        rows, _ = self._gradients(totals, source, unconnected_gradients)
        return self._stacked([row[0] for row in rows], 1, target.shape[1:], point.shape,
                             batch=True)

    def _begin(self, what, unconnected_gradients):
        if self._used and not self.persistent:
            raise RuntimeError(f"GradientTape.{what} can only be called once on a "
                               f"non-persistent tape; create it with persistent=True to take "
                               f"several gradients")
        if unconnected_gradients not in ("none", "zero"):
            raise ValueError(f"GradientTape.{what}: unconnected_gradients must be 'none' or "
                             f"'zero', got {unconnected_gradients!r}")
        self._used = True

    def _gradients(self, totals, sources, unconnected_gradients):
        """The gradients of each of ``totals`` with respect to the leaves of ``sources``: a
        list per total (graph values, or arrays on an eager tape, which runs them together),
        and the leaves' graph values."""
        points = [self._as_source(leaf, "gradient") for leaf in _leaves(sources)]
        if self._session is None:
            rows = [grad(total, points, stop=self._stopped) for total in totals]
        else:
            rows = self._session.gradient(totals, points, self._stopped)
            if not self.persistent:
                self._session.release()     # its one gradient is taken
                release(totals)
        if not self.watch_accessed_variables:     # only what was watched has a gradient
            watched = {id(self._as_source(leaf, "watch")) for leaf in self._watched}
            rows = [[g if id(p) in watched else None for g, p in zip(row, points)]
                    for row in rows]
        if unconnected_gradients == "zero":
            rows = [[_zeros(p, eager=self._session is not None) if g is None else g
                     for g, p in zip(row, points)] for row in rows]
        return rows, points

    def _stacked(self, grads, axis, target_shape, source_shape, batch=False):
        """One Jacobian from the gradients of the target's elements, stacked on ``axis`` and
        shaped ``target_shape + source_shape`` (after the batch axis, for ``batch``); None
        when no element depends on the source."""
        if all(g is None for g in grads):
            return None
        eager = self._session is not None
        like = next(g for g in grads if g is not None)
        grads = [_zeros(like, eager) if g is None else g for g in grads]
        stacked = np.stack(grads, axis) if eager else ops.stack(grads, axis)
        shape = tuple(target_shape) + tuple(source_shape[1:] if batch else source_shape)
        shape = ((-1,) + shape) if batch else shape
        return stacked.reshape(shape) if eager else ops.reshape(stacked, shape)

    def _as_source(self, leaf, what):
        if self._session is not None and not isinstance(leaf, (Var, Variable)) and \
                isinstance(leaf, (np.ndarray, np.generic)):
            return self._session.input(leaf)     # an array the block took (or will take)
        return _as_source(leaf, what)


def _zeros(point, eager):
    if eager:
        return np.zeros(point.shape, point.dtype)
    return ops.broadcast_like(ops.constant(0.0, point.dtype), point)


def _one_target(target, what, eager):
    """The one tensor a Jacobian is taken of (a Variable's value as it is)."""
    leaves = _leaves(target)
    if len(leaves) != 1:
        raise TypeError(f"GradientTape.{what}: the target must be one tensor, got "
                        f"{len(leaves)}")
    _check_targets(leaves, eager)
    return leaves[0].read if isinstance(leaves[0], Variable) else leaves[0]


def _check_targets(targets, eager):
    for t in targets:
        if not isinstance(t, (Var, Variable)):
            where = "in the tape's block, from the model's outputs or the watched inputs" \
                if eager else "in a traced step (a train_step, or a function decorated " \
                "with @hiapi.function)"
            raise TypeError(f"GradientTape.gradient: the target must be a tensor computed "
                            f"{where}, got {type(t).__name__}: a value computed from numpy "
                            f"arrays, or outside the block, has no recorded history")


def _target(target, output_gradients, eager=False):
    targets = _leaves(target)
    _check_targets(targets, eager)
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
        total = ops.add(total, t)       # graph ops even for targets that hold values
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
