"""Horovod's two calls for a training loop written from scratch: ``DistributedGradientTape``
and ``broadcast_variables``.

``fit`` under a data-parallel ``Strategy`` averages the gradients of a model's own
``train_step`` over the workers. A loop from scratch has no model step to rewrite: the user
holds the tape. As Horovod's TensorFlow 2 scripts do, wrap it, and its gradients come back
averaged over every process of ``mpiexec`` (the mean of the workers' gradients, each of its
own batch: with equal batches, the gradient of the global batch)::

    with hiapi.GradientTape() as tape:
        loss_value = loss_fn(y, model(x, training=True))
    tape = hiapi.distribute.DistributedGradientTape(tape)
    grads = tape.gradient(loss_value, model.trainable_weights)
    optimizer.apply(grads, model.trainable_weights)
    if first_batch:                                  # every rank starts from rank 0's values
        hiapi.distribute.broadcast_variables(model.variables, root_rank=0)
        hiapi.distribute.broadcast_variables(optimizer.variables, root_rank=0)

Eagerly the gradients are numpy arrays, summed by one allreduce per dtype and divided by the
number of workers. Inside ``@hiapi.function`` they are graph values, and the average is built
into the compiled step as the Strategy builds it (``AllreduceStart``/``AllreduceWait`` around
one bucket per dtype, each worker's share scaled by ``1/size`` before the sum). In one process
both are the gradients themselves.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from hiapi import tree
from hiapi.backends import get_backend
from hiapi.distribute.communicator import world
from hiapi.distribute.ops import AllreduceStart, AllreduceWait, Bucket, register_kernels
from hiapi.distribute.strategy import CommunicationStats
from hiapi.graph import ops, step_recording, tracing
from hiapi.graph.var import Var


class DistributedGradientTape:
    """A ``GradientTape`` whose ``gradient`` is averaged over the workers (Horovod's
    ``hvd.DistributedGradientTape``). Wrap a tape after its block, or use the wrapper as the
    block itself (``with DistributedGradientTape(hiapi.GradientTape()) as tape:``); every
    other method is the tape's."""

    def __init__(self, tape: Any, communicator: Any = None) -> None:
        self._tape = tape
        self.communicator = communicator or world()
        self.stats = CommunicationStats()

    def __enter__(self) -> DistributedGradientTape:
        self._tape.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._tape.__exit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tape, name)

    def gradient(self, target: Any, sources: Any, output_gradients: Any = None,
                 unconnected_gradients: str = "none") -> Any:
        record = step_recording.active()
        if record is not None and record.plan is not None:
            raise RuntimeError("DistributedGradientTape inside a train_step that fit runs under "
                               "a Strategy: the Strategy averages that step's gradients "
                               "already (they would be averaged twice); use a plain "
                               "GradientTape there, and this wrapper in loops from scratch")
        grads = self._tape.gradient(target, sources, output_gradients, unconnected_gradients)
        leaves = tree.flatten(grads)
        present = [i for i, g in enumerate(leaves) if g is not None]
        if self.communicator.size > 1 and present:
            averaged = self._average([leaves[i] for i in present])
            for i, value in zip(present, averaged):
                leaves[i] = value
        return tree.pack_sequence_as(grads, leaves)

    def _average(self, grads):
        """The mean over workers of ``grads`` (every rank passes the same shapes in the same
        order: the same code on every rank), one collective per dtype."""
        symbolic = [isinstance(g, Var) for g in grads]
        if any(symbolic) and not all(symbolic):
            raise TypeError("DistributedGradientTape: gradients mix graph values and arrays")
        average = _graph_average if symbolic[0] else _array_average
        out = list(grads)
        for dtype in dict.fromkeys(np.dtype(g.dtype) for g in grads):
            members = [i for i, g in enumerate(grads) if np.dtype(g.dtype) == dtype]
            for i, value in zip(members, average([grads[i] for i in members], self)):
                out[i] = value
        return out


def _array_average(grads, tape):
    arrays = [np.asarray(g) for g in grads]
    flat = np.concatenate([a.reshape(-1) for a in arrays])
    tape.stats.record(flat.nbytes, flat.nbytes)
    tape.communicator.allreduce(flat)                   # summed in place
    flat /= tape.communicator.size
    sizes = np.cumsum([a.size for a in arrays])[:-1]
    return [part.reshape(a.shape) for part, a in zip(np.split(flat, sizes), arrays)]


def _graph_average(grads, tape):
    register_kernels(get_backend())
    sizes = [int(np.prod(g.shape)) for g in grads]
    scale = ops.constant(np.asarray(1.0 / tape.communicator.size, grads[0].dtype))
    bucket = Bucket(tape.communicator, sizes, tape.stats)
    flat = AllreduceWait(bucket)(AllreduceStart(bucket)(scale, *grads))
    out, offset = [], 0
    for gradient, size in zip(grads, sizes):
        out.append(ops.reshape(ops.slice_axis(flat, 0, offset, offset + size), gradient.shape))
        offset += size
    return out


def broadcast_variables(variables: Any, root_rank: int = 0, communicator: Any = None) -> None:
    """Give every worker ``root_rank``'s values of ``variables`` (Horovod's
    ``hvd.broadcast_variables``): what a loop from scratch calls once, after its first step
    (when the optimizer's slots exist), so that all workers train the same model. It sets the
    values now, also when called while a ``@hiapi.function`` is being traced (its first call,
    where Horovod's scripts make it); a collective: call it on every rank."""
    communicator = communicator or world()
    if communicator.size == 1:
        return
    for variable in tree.flatten(variables):
        value = np.array(variable.numpy(), order="C")       # 0-d stays 0-d
        communicator.bcast(value, root_rank)
        if tracing.in_trace():
            variable.storage = value        # now, not as an update of the step being traced
        else:
            variable.assign(value)
