"""Optimizer state sharded across workers: ZeRO stage 1 (Rajbhandari et al., "ZeRO: Memory
Optimizations Toward Training Trillion Parameter Models", 2020, https://arxiv.org/abs/1910.02054;
PyTorch's ``ZeroRedundancyOptimizer``).

    strategy = hiapi.distribute.Strategy(shard_optimizer_state=True)

Each trainable parameter is owned by one worker. Parameters are sharded whole, never split,
so per-tensor rules (LARS's trust ratio from the whole layer's norms, clipnorm) stay exact; they
are dealt largest first to the least-loaded worker, which balances the slot bytes when the
model has several tensors of similar size (one dominant tensor cannot be split, so its owner
holds it all). In the train step:

- gradients are allreduced as without sharding (stage 1: the owner uses its own, the others'
  copies are dropped), then only owned parameters reach the optimizer, so it builds slots
  (momentum, Adam's moments, ...) for 1/N of the parameters on each worker;
- the owner applies the update and broadcasts the parameter's new value to every worker, in
  one fixed order on every rank (each broadcast waits for the previous one, and the first
  for every gradient reduction, so all ranks issue their collectives in the same order).

Not (yet) supported, each an error when asked for: ``model.save`` with the optimizer state
(rank 0 holds only its shard; ``save_weights`` or ``include_optimizer=False`` work), the
gradient compressors other than dense ones, ``global_clipnorm`` (it needs the norm over all
shards), and the cupy backend.
"""
from hiapi.graph.op import Op


class ParameterBroadcast(Op):
    """The new value of one parameter, sent by its owner to every worker."""
    name = "parameter_broadcast"
    stateful = True

    def __init__(self, communicator, root):
        self.communicator, self.root = communicator, root

    def key(self):
        return (id(self),)

    def infer(self, *after_and_value):
        return after_and_value[-1].shape, after_and_value[-1].dtype

    def grad(self, inputs, y, g):
        raise NotImplementedError("collectives are not differentiable")


def parameter_broadcast(out, *after_and_value, communicator, root):
    out[...] = after_and_value[-1]
    communicator.bcast(out, root=root)


def assign_owners(variables, size):
    """Owner rank of each variable: largest first to the least-loaded rank (ties: lowest)."""
    load = [0] * size
    owners = [0] * len(variables)
    by_size = sorted(range(len(variables)), key=lambda i: -_nbytes(variables[i]))
    for i in by_size:
        rank = min(range(size), key=lambda r: load[r])
        owners[i] = rank
        load[rank] += _nbytes(variables[i])
    return owners


def _nbytes(variable):
    count = 1
    for dim in variable.shape:
        count *= int(dim)
    return count * variable.dtype.itemsize


class OptimizerSharding:
    """The stage-1 rewrite ``Strategy(shard_optimizer_state=True)`` applies to the train step."""

    def __init__(self, communicator):
        self.communicator = communicator
        self.rank, self.size = communicator.rank, communicator.size
        self._reduced = []

    def check(self, strategy, backend_name):
        if not strategy.compressor.dense:
            raise NotImplementedError(
                f"Strategy(shard_optimizer_state=True): gradient compression "
                f"{strategy.compressor.name!r} is not supported with sharded optimizer state; "
                f"use compression='none'")
        if backend_name == "cupy":
            raise NotImplementedError(
                "Strategy(shard_optimizer_state=True) is not supported on the cupy backend; "
                "use a CPU backend (numpy or numba)")

    def keep_owned(self, reduced, variables):
        """The reduced gradients of the parameters this rank owns (None for the others)."""
        self._reduced = [g for g in reduced if g is not None]
        owners = assign_owners(variables, self.size)
        return [g if owner == self.rank else None for g, owner in zip(reduced, owners)]

    def get_updates(self, optimizer, gradients, variables):
        if optimizer.global_clipnorm is not None:
            raise NotImplementedError(
                f"{optimizer.name}: global_clipnorm={optimizer.global_clipnorm} is not "
                f"supported with Strategy(shard_optimizer_state=True) (each rank sees only "
                f"its shard's gradients); use clipnorm or clipvalue")
        optimizer.sharded_by = self
        updates = optimizer.get_updates(gradients, variables)
        parameters = {id(v) for v in variables}
        new = {id(state): value for state, value in updates if id(state) in parameters}
        out, after = [], self._reduced     # no rank broadcasts before all reductions are done
        for variable, owner in zip(variables, assign_owners(variables, self.size)):
            value = new.get(id(variable), variable.read)
            sent = ParameterBroadcast(self.communicator, owner)(*after, value)
            out.append((variable, sent))
            after = [sent]
        # The broadcasts come first and their dependencies before the rank's own updates, so
        # the scheduler's depth-first order (which breaks ties) reaches the gradient buckets in
        # the same order on every rank, and every rank starts their allreduces in one order.
        return out[::-1] + [(s, v) for s, v in updates if id(s) not in parameters]

    def begin_variables(self, model):
        """What rank 0 broadcasts at the start of ``fit``: not the slots, each rank's own."""
        return model.weights + model.state_variables + [model.optimizer.iterations]


def register_kernels(backend):
    backend.kernels.setdefault("parameter_broadcast", parameter_broadcast)
