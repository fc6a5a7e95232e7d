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
plain data-parallel ``Strategy`` over each part's replicas reduces its gradients). Saving joins
the optimizer state's slices too (``SlicedOptimizerState``), so rank 0 writes the file one
process would, and ``BackupAndRestore`` hands each rank its slices back. With
``pipeline_stages=K`` as well, ``PipelineStrategy`` applies the same rewrite to each stage.
"""
import numpy as np

from hiapi.backends import get_backend
from hiapi.graph import Function, grad
from hiapi.distribute.communicator import LocalCommunicator, MPICommunicator
from hiapi.distribute.sharding import unsharded_slot_order
from hiapi.distribute.strategy import Strategy
from hiapi.distribute.tensor_parallel import ops as tp_ops
from hiapi.distribute.tensor_parallel.rewrite import TensorParallelRewrite
from hiapi.models import steps
from hiapi.models.distribution import LOCAL


class SlicedOptimizerState:
    """The optimizer state of split weights, whole for a file. ``consolidate`` (a collective
    of the tensor-parallel group, run by the checkpoint callbacks and at the end of ``fit``)
    joins each slot's slices in the order an unsharded optimizer builds its slots; ``restore``
    gives each rank its slice of a whole state."""

    def __init__(self, strategy, model):
        self.strategy, self.model = strategy, model
        self._snapshot = None

    def _full_order(self, optimizer):
        return unsharded_slot_order(optimizer, list(self.model.trainable_weights))

    def consolidate(self, optimizer):
        slices = self.strategy.rewrite.slices
        state = [optimizer.iterations.numpy()]
        for whole, slot_name in self._full_order(optimizer):
            if id(whole) in slices:
                _, local, axis = slices[id(whole)]
                state.append(self.strategy.join(optimizer.get_slot(local, slot_name).numpy(),
                                                whole.shape, axis))
            else:
                state.append(optimizer.get_slot(whole, slot_name).numpy())
        self._snapshot = (int(state[0]), state)

    def release(self):
        self._snapshot = None

    def consolidated_state(self, optimizer, what):
        if self._snapshot is None or self._snapshot[0] != int(optimizer.iterations.numpy()):
            raise RuntimeError(
                f"{what}: with Strategy(tensor_parallel=...) each rank holds slices of the "
                f"optimizer state, so they must be joined first, on every rank: ModelCheckpoint, "
                f"BackupAndRestore and the end of fit do it; elsewhere call "
                f"strategy.consolidate(model) on every rank first (or save with "
                f"include_optimizer=False)")
        return self._snapshot[1]

    def restore(self, optimizer, values, filepath):
        order = self._full_order(optimizer)
        if len(values) != len(order) + 1:
            raise ValueError(f"{filepath}: the optimizer state has {len(values)} variables, "
                             f"the model's {type(optimizer).__name__} has {len(order) + 1}")
        optimizer.iterations.assign(values[0])
        slices = self.strategy.rewrite.slices
        for (whole, slot_name), value in zip(order, values[1:]):
            if tuple(value.shape) != whole.shape:
                raise ValueError(f"{filepath}: slot {slot_name!r} of {whole.name!r} has shape "
                                 f"{tuple(value.shape)}, the variable {whole.shape}")
            if id(whole) in slices:
                _, local, axis = slices[id(whole)]
                optimizer.get_slot(local, slot_name).assign(self.strategy.own_slice(value, axis))
            else:
                optimizer.get_slot(whole, slot_name).assign(value)


class TensorParallelStrategy(Strategy, chosen_by="tensor_parallel"):
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
        self.optimizer_state = None

    def train_function(self, model, xs, ys, weighted=False):
        """The model's train step, traced whole, rewritten into this rank's slices."""
        tp_ops.register_kernels(get_backend())
        feeds, results, state = steps._loss_graph(model, xs, ys, weighted, training=True)
        kernels, tables = split_layers(model)
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
            self.optimizer_state = SlicedOptimizerState(self, model)
            model.optimizer.sharded_by = self.optimizer_state
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

    def global_batch(self, local_n):
        """A replica's tensor parts share its ``local_n`` samples (``train_on_batch``)."""
        return local_n * self.replicas

    def step_inputs(self):
        return self.data.step_inputs() if self.data else []

    def step_values(self, local_n, global_n):
        if self.optimizer_state is not None:     # a checkpoint's joined state: no longer
            self.optimizer_state.release()
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
        """Rank 0's weights, layer state, step count and seed everywhere (not the optimizer's
        slots: each rank holds its own part of them)."""
        self._check_same_model(model)
        self._start_from_rank_0(model, model.weights + model.state_variables +
                                [model.optimizer.iterations])
        self._slice_pending = True

    def own_slice(self, whole, axis):
        return own_slice(whole, self.tensor_parallel, self.part, axis)

    def join(self, local, shape, axis):
        return join(self.tensor_communicator, self.tensor_parallel, local, shape, axis)

    def _slice_whole_into_local(self):
        for whole, local, axis in self.rewrite.slices.values():
            local.assign(self.own_slice(whole.numpy(), axis))

    def _gather_local_into_whole(self):
        for whole, local, axis in self.rewrite.slices.values():
            whole.assign(self.join(local.numpy(), whole.shape, axis))

    def reduce_totals(self, compiled):
        """End of an epoch's training: a replica's parts logged the same totals, which are
        summed over the replicas; the whole weights are filled from the slices for validation
        and the epoch's callbacks."""
        if self.data is not None:
            self.data.reduce_totals(compiled)
        self._gather_local_into_whole()

    def consolidate(self, model):
        """Whole weights from the slices and, for a save, the whole optimizer state (a
        collective: the checkpoint callbacks and the end of ``fit`` run it on every rank)."""
        self._gather_local_into_whole()
        if self.optimizer_state is not None and model.optimizer.built:
            self.optimizer_state.consolidate(model.optimizer)


def own_slice(whole, parts, part, axis):
    """Part ``part`` of ``parts`` of a whole array, as the rewrite cuts it."""
    return np.array_split(whole, parts, axis=axis)[part]


def join(communicator, parts, local, shape, axis):
    """The whole array of ``shape`` from every part's slice (an allgather over the tensor
    group ``communicator``), C-contiguous: joining along a later axis gives a Fortran-ordered
    array, and an MPI send or broadcast of that sends raw memory, the values transposed."""
    pieces, sizes = communicator.allgather(
        np.ascontiguousarray(np.moveaxis(local, axis, 0)).reshape(-1))
    pieces = np.split(pieces, np.cumsum(sizes)[:-1])
    shapes = [np.moveaxis(p, axis, 0).shape for p in
              np.array_split(np.empty(shape, np.int8), parts, axis=axis)]
    return np.ascontiguousarray(np.concatenate([np.moveaxis(piece.reshape(s), 0, axis)
                                                for piece, s in zip(pieces, shapes)], axis=axis))


def split_layers(model):
    """Ids of the kernels (Dense, Conv2D) and tables (Embedding) the rewrite may split."""
    kernels = {id(layer.kernel) for layer in _layers(model)
               if type(layer).__name__ in ("Dense", "Conv2D") and
               getattr(layer, "kernel", None) is not None}
    tables = {id(layer.embeddings) for layer in _layers(model)
              if type(layer).__name__ == "Embedding"}
    return kernels, tables


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
