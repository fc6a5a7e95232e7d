"""``Strategy(tensor_parallel=T)``: the model's Dense and Conv2D layers split across T ranks
(Megatron-LM's column- and row-parallel pairs, ``rewrite.py``) and its Embedding tables by
vocabulary, every rank seeing the whole batch.

    strategy = hiapi.distribute.Strategy(tensor_parallel=2)
    with strategy.scope():
        model = make_model()
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    model.fit(x, y, batch_size=128, epochs=5)     # mpiexec -n 2 python train.py

Each rank keeps 1/T of each split kernel (and of its optimizer slots) and computes 1/T of
those layers; the activations between a pair are 1/T wide. Training equals one process (the
pairs' partial sums are exact; floating-point order differs). The whole Variables are filled
from the slices at each epoch end and at the end of ``fit`` (an allgather per sliced weight),
so validation, ``evaluate``, ``predict``, ``get_weights`` and ``save_weights`` see the trained
model on every rank. ``mpiexec -n D*T`` runs D data-parallel replicas of the T-way split (a
plain data-parallel ``Strategy`` over each part's replicas reduces its gradients). Not yet:
saving the optimizer state (``model.save`` under this strategy needs
``include_optimizer=False``; ``BackupAndRestore`` is refused) and combining with pipeline
parallelism.
"""
import numpy as np

from hiapi.backends import get_backend
from hiapi.graph import Function, grad
from hiapi.distribute.communicator import LocalCommunicator, MPICommunicator
from hiapi.distribute.strategy import Strategy
from hiapi.distribute.tensor_parallel import ops as tp_ops
from hiapi.distribute.tensor_parallel.rewrite import TensorParallelRewrite
from hiapi.models import steps
from hiapi.models.distribution import LOCAL


class UnsavedOptimizerState:
    """Stands in for the optimizer's consolidation: saving the sliced state is not done yet."""

    def consolidated_state(self, optimizer, what):
        raise NotImplementedError(
            f"{what}: saving the optimizer state of a model trained with "
            f"Strategy(tensor_parallel=...) is not supported yet (each rank holds slices of it); "
            f"use model.save(..., include_optimizer=False) or save_weights")

    def restore(self, optimizer, values, filepath):
        raise NotImplementedError(f"{filepath}: restoring optimizer state under "
                                  f"Strategy(tensor_parallel=...) is not supported yet")


class TensorParallelStrategy(Strategy):
    def __init__(self, tensor_parallel=2, communicator=None, algorithm="native"):
        super().__init__(communicator=communicator, algorithm=algorithm)
        parts = int(tensor_parallel)
        if parts != tensor_parallel or parts < 2:
            raise ValueError(f"Strategy: tensor_parallel must be an integer >= 2, got "
                             f"{tensor_parallel!r}")
        if self.size > 1 and self.size % parts:
            raise ValueError(
                f"Strategy(tensor_parallel={parts}) splits each layer over {parts} ranks, D "
                f"data-parallel replicas side by side: start it with mpiexec -n D*{parts} "
                f"(this job has {self.size} ranks)")
        # the process grid: rank = replica * T + part; a replica's T parts are neighbours
        self.tensor_parallel = parts if self.size > 1 else 1   # 1 without mpiexec: no split
        self.replicas = self.size // self.tensor_parallel
        self.part, self.replica = self.rank % self.tensor_parallel, \
            self.rank // self.tensor_parallel
        self.tensor_communicator, data = _grid(self.communicator, self.part, self.replica)
        # gradients of a part are averaged over the replicas by a plain data-parallel Strategy
        self.data = Strategy(communicator=data) if self.replicas > 1 else None
        self.rewrite = TensorParallelRewrite(self.tensor_communicator, self.tensor_parallel,
                                             self.part)
        self.pairs = 0
        self._slice_pending = False

    def train_function(self, model, xs, ys, weighted=False):
        """The model's train step, traced whole, rewritten into this rank's slices."""
        tp_ops.register_kernels(get_backend())
        feeds, results, state = steps._loss_graph(model, xs, ys, weighted, training=True)
        kernels = {id(layer.kernel) for layer in _layers(model)
                   if type(layer).__name__ in ("Dense", "Conv2D") and
                   getattr(layer, "kernel", None) is not None}
        tables = {id(layer.embeddings) for layer in _layers(model)
                  if type(layer).__name__ == "Embedding"}
        roots = list(results) + [value for _, value in state.updates]
        if self.tensor_parallel > 1:
            roots, self.pairs = self.rewrite.apply(roots, kernels, tables)
        results, update_values = roots[:len(results)], roots[len(results):]
        local = {key: entry[1] for key, entry in self.rewrite.slices.items()}
        params = [local.get(id(p), p) for p in model.trainable_weights]
        gradients = grad(results[0], [p.read for p in params])
        if self.data is not None:         # over the replicas: buckets overlapping backward
            gradients = self.data.reduce_gradients(gradients, params, model.optimizer)
        updates = model.optimizer.get_updates(gradients, params) + \
            [(variable, value) for (variable, _), value in zip(state.updates, update_values)]
        if self.rewrite.slices:
            model.optimizer.sharded_by = UnsavedOptimizerState()
        self._model = model
        return Function(feeds + model.optimizer.step_inputs() + self.step_inputs(), results,
                        updates,
                        name="train_step", recompute=getattr(model, "_recompute", None),
                        forward_outputs=len(results))

    # ---- data: every rank sees the whole batch -----------------------------------------------
    def batches(self, n, batch_size, shuffle, rng):
        """A replica's parts all see that replica's share of the global batch."""
        return (self.data or LOCAL).batches(n, batch_size, shuffle, rng)

    def agree_batch(self, local_n, has_batch, step, what):
        return LOCAL.agree_batch(local_n, has_batch, step, what)

    def step_inputs(self):
        return self.data.step_inputs() if self.data else []

    def step_values(self, local_n, global_n):
        if self._slice_pending:              # first step of fit: after any restore
            self._slice_whole_into_local()
            self._slice_pending = False
        self.stats.steps += 1
        return self.data.step_values(local_n, global_n) if self.data else []

    @property
    def evaluation_plan(self):
        return LOCAL

    # ---- the whole weights and their slices --------------------------------------------------
    def begin(self, model):
        self._check_same_model(model)
        for variable in model.weights + model.state_variables + [model.optimizer.iterations]:
            self.communicator.bcast(variable.value, root=0)
        from hiapi import random as _random
        seed = np.array([_random.model_shuffle_seed(model)], np.int64)
        model._shuffle_seed = int(self.communicator.bcast(seed, root=0)[0])
        self._slice_pending = True

    def _slice_whole_into_local(self):
        for whole, local, axis in self.rewrite.slices.values():
            local.assign(np.array_split(whole.numpy(), self.tensor_parallel,
                                        axis=axis)[self.part])

    def _gather_local_into_whole(self):
        for whole, local, axis in self.rewrite.slices.values():
            pieces, sizes = self.tensor_communicator.allgather(
                np.ascontiguousarray(np.moveaxis(local.numpy(), axis, 0)).reshape(-1))
            parts = np.split(pieces, np.cumsum(sizes)[:-1])
            split_shapes = [np.moveaxis(p, axis, 0).shape for p in
                            np.array_split(whole.numpy(), self.tensor_parallel, axis=axis)]
            whole.assign(np.concatenate([np.moveaxis(part.reshape(shape), 0, axis)
                                         for part, shape in zip(parts, split_shapes)],
                                        axis=axis))

    def reduce_totals(self, compiled):
        """End of an epoch's training: a replica's parts logged the same totals, which are
        summed over the replicas; the whole weights are filled from the slices for validation
        and the epoch's callbacks."""
        if self.data is not None:
            self.data.reduce_totals(compiled)
        self._gather_local_into_whole()

    def consolidate(self, model):
        self._gather_local_into_whole()


def _grid(communicator, part, replica):
    """This replica's tensor-parallel communicator and this part's data-parallel one."""
    if communicator.size == 1:
        return communicator, LocalCommunicator()
    tensor = communicator.comm.Split(replica, part)
    data = communicator.comm.Split(part, replica)
    return (MPICommunicator(tensor) if tensor.Get_size() > 1 else LocalCommunicator(),
            MPICommunicator(data) if data.Get_size() > 1 else LocalCommunicator())


def _layers(layer):
    yield layer
    for sublayer in getattr(layer, "_sublayers", ()):
        yield from _layers(sublayer)
