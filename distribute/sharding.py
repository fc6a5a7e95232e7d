"""Optimizer state and gradients sharded across workers: ZeRO stage 2 (Rajbhandari et al.,
"ZeRO: Memory Optimizations Toward Training Trillion Parameter Models", 2020,
https://arxiv.org/abs/1910.02054; PyTorch's ``ZeroRedundancyOptimizer`` and FSDP's
``SHARD_GRAD_OP``).

    strategy = hiapi.distribute.Strategy(shard_optimizer_state=True)

Each trainable parameter is owned by one worker. Parameters are sharded whole, never split,
so per-tensor rules (LARS's trust ratio from the whole layer's norms, clipnorm) stay exact; they
are dealt largest first to the least-loaded worker, which balances the slot bytes when the
model has several tensors of similar size (one dominant tensor cannot be split, so its owner
holds it all). In the train step:

- gradients are *reduced to their owner* (``MPI_Ireduce``) in per-owner buckets that overlap the
  backward pass, instead of allreduced to everyone: the reduce-scatter half of an allreduce,
  so only the owner ever holds a parameter's summed gradient and half the allreduce traffic
  is saved; every rank posts its buckets in one fixed order (each start waits for the
  previous one), whatever order its own (rank-dependent) graph would schedule them in;
- only owned parameters reach the optimizer, so it builds slots (momentum, Adam's moments,
  ...) for 1/N of the parameters on each worker;
- the owner applies the update and broadcasts the parameter's new value to every worker (the
  all-gather half), in one fixed order on every rank (each broadcast waits for the previous
  one, and the first for every gradient reduction).

Saving: the state is *consolidated* (every slot sent to rank 0, in the order an unsharded
optimizer keeps it) by a collective that ``ModelCheckpoint``, ``BackupAndRestore`` and the end
of ``fit`` run on every rank, so the file rank 0 writes is the file unsharded training would
write; ``model.save`` after ``fit`` on rank 0 alone works. Restoring hands each rank the slots
it owns. Not supported, each an error when asked for: the gradient compressors other than
dense ones, ``global_clipnorm`` (it needs the norm over all shards), and the cupy backend.
"""
import copy

import numpy as np

from hiapi.graph import Variable, ops
from hiapi.graph.op import Op
from hiapi.distribute.ops import Bucket


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


class OwnerBucket(Bucket):
    """Gradients of parameters with one owner, reduced together onto that owner."""

    def __init__(self, communicator, sizes, stats, owner):
        super().__init__(communicator, sizes, stats)
        self.owner = owner


class ReduceStart(Op):
    """Pack a bucket (scaled by this worker's share of the global batch) and start its
    non-blocking reduction to the owner. Input 0 is the previous bucket's start, which fixes
    the order every rank posts its reductions in (MPI matches collectives by order)."""
    name = "reduce_to_owner_start"
    priority = "early"
    stateful = True

    def __init__(self, bucket):
        self.bucket = bucket

    def key(self):
        return (id(self),)

    def infer(self, after, scale, *gradients):
        return (sum(self.bucket.sizes),), gradients[0].dtype

    def grad(self, inputs, y, g):
        raise NotImplementedError("collectives are not differentiable")


class ReduceWait(Op):
    """Complete a bucket's reduction (as late as possible, so it overlaps the backward pass);
    on the owner the buffer then holds the summed gradients."""
    name = "reduce_to_owner_wait"
    priority = "late"
    view_of = 0
    stateful = True

    def __init__(self, bucket):
        self.bucket = bucket

    def key(self):
        return (id(self),)

    def infer(self, flat):
        return flat.shape, flat.dtype


def reduce_to_owner_start(out, after, scale, *gradients, bucket):
    offset = 0
    for gradient, size in zip(gradients, bucket.sizes):
        np.multiply(gradient.reshape(-1), scale, out=out[offset:offset + size])
        offset += size
    bucket.stats.record(out.nbytes, out.nbytes)
    bucket.request = bucket.communicator.ireduce(out, bucket.owner)


def reduce_to_owner_wait(flat, bucket):
    bucket.request.wait()
    bucket.request = None
    return flat


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


def unsharded_slot_order(optimizer, variables):
    """``(variable, slot_name)`` of every slot an unsharded ``optimizer`` would build for
    ``variables``, in its order (the order of a model file): a shallow copy of the optimizer
    builds its slots on one-element stand-ins, so nothing of real size is allocated."""
    stand_ins = [Variable(np.zeros((1,) * len(v.shape), v.dtype), name=v.name)
                 for v in variables]
    clone = copy.copy(optimizer)
    clone._slots, clone.built = {}, False
    clone.build(stand_ins)
    real = {id(s): v for s, v in zip(stand_ins, variables)}
    return [(real[variable_id], slot_name) for variable_id, slot_name in clone._slots]


def _count(variable):
    count = 1
    for dim in variable.shape:
        count *= int(dim)
    return count


def _nbytes(variable):
    return _count(variable) * variable.dtype.itemsize


class OptimizerSharding:
    """The stage-1 rewrite ``Strategy(shard_optimizer_state=True)`` applies to the train step."""

    def __init__(self, communicator):
        self.communicator = communicator
        self.rank, self.size = communicator.rank, communicator.size
        self._reduced, self._trained = [], []
        self.snapshot = None        # (iteration, whole state) on rank 0 after consolidate

    def owners(self, variables):
        """The rank that owns each variable (a pipeline owns them by stage instead)."""
        return assign_owners(variables, self.size)

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

    def reduce_to_owners(self, gradients, variables, scale, stats, bucket_cap_bytes):
        """Each gradient summed over workers onto its owner: the owned ones reduced (None for
        the others and for variables without a gradient), in per-owner buckets."""
        owner_of = dict(zip(map(id, variables), self.owners(variables)))
        pairs = [(g, v) for g, v in zip(gradients, variables) if g is not None]
        self._trained = [v for _, v in pairs]     # what an unsharded optimizer would build for
        reduced, after = {}, scale
        self._reduced = []
        for owner, members in self._buckets(pairs, owner_of, bucket_cap_bytes):
            sizes = [_count(v) for _, v in members]
            bucket = OwnerBucket(self.communicator, sizes, stats, owner)
            started = ReduceStart(bucket)(after, ops.cast(scale, members[0][0].dtype),
                                          *[g for g, _ in members])
            flat = ReduceWait(bucket)(started)
            self._reduced.append(flat)
            after = started
            if owner != self.rank:
                continue
            offset = 0
            for (_, variable), n in zip(members, sizes):
                part = ops.slice_axis(flat, 0, offset, offset + n)
                reduced[id(variable)] = ops.reshape(part, variable.shape)
                offset += n
        return [reduced.get(id(v)) for v in variables]

    @staticmethod
    def _buckets(pairs, owner_of, cap_bytes):
        """``(owner, [(gradient, variable), ...])`` in the order the backward pass completes
        them (by the position of each bucket's last gradient): the same on every rank."""
        closed, open_ = [], {}
        for position, (gradient, variable) in enumerate(reversed(pairs)):
            owner = owner_of[id(variable)]
            members, size, _ = open_.get(owner, ([], 0, None))
            if members and (size + _nbytes(variable) > cap_bytes or
                            gradient.dtype != members[0][0].dtype):
                closed.append(open_.pop(owner))
                members, size = [], 0
            members.append((gradient, variable))
            open_[owner] = (members, size + _nbytes(variable), (position, owner))
        closed.extend(open_.values())
        closed.sort(key=lambda bucket: bucket[2])
        return [(last[1], members) for members, _, last in closed]

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
        for variable, owner in zip(variables, self.owners(variables)):
            value = new.get(id(variable), variable.read)
            sent = ParameterBroadcast(self.communicator, owner)(*after, value)
            out.append((variable, sent))
            after = [sent]
        # The broadcasts come first and their dependencies before the rank's own updates, so
        # the scheduler's depth-first order (which breaks ties) reaches the gradient buckets in
        # the same order on every rank, and every rank starts their allreduces in one order.
        return out[::-1] + [(s, v) for s, v in updates if id(s) not in parameters]

    # ---- saving and restoring --------------------------------------------------------------
    def _full_order(self, optimizer):
        return unsharded_slot_order(optimizer, self._trained)

    def consolidate(self, optimizer, root=0):
        """Collective: ``root`` receives the whole optimizer state (the unsharded order:
        iteration counter, then every slot) and keeps it for ``model.save`` until the next
        train step (``release``), so a checkpoint does not cost rank 0 a whole copy of the
        state while it trains."""
        self.snapshot = None
        if not optimizer.built:
            return
        owner_of = dict(zip(map(id, self._trained), self.owners(self._trained)))
        state = [optimizer.iterations.numpy().copy()]
        for variable, slot_name in self._full_order(optimizer):
            owner = owner_of[id(variable)]
            buffer = optimizer.get_slot(variable, slot_name).numpy().copy() \
                if owner == self.rank else np.empty(variable.shape, variable.dtype)
            if owner != root:
                self.communicator.bcast(buffer, root=owner)
            state.append(buffer if self.rank == root else None)
        self.snapshot = (int(state[0]), state) if self.rank == root else None

    def release(self):
        """Drop the gathered state (the strategies call it at each train step)."""
        self.snapshot = None

    def consolidated_state(self, optimizer, what):
        """The whole state for a file, as consolidated at this step (else a clear error)."""
        if not optimizer.built:
            return [optimizer.iterations.numpy()]
        snapshot = self.snapshot
        if snapshot is None or snapshot[0] != int(optimizer.iterations.numpy()):
            raise RuntimeError(
                f"{what}: with Strategy(shard_optimizer_state=True) each rank holds only its "
                f"shard of the optimizer state, so it must be gathered first, on every rank: "
                f"ModelCheckpoint, BackupAndRestore and the end of fit do it; elsewhere call "
                f"strategy.consolidate(model) on every rank before rank 0 saves (or save with "
                f"include_optimizer=False)")
        return snapshot[1]

    def restore(self, optimizer, values, filepath):
        """Each rank takes the slots it owns from a whole (unsharded-order) state."""
        order = self._full_order(optimizer)
        if len(values) != len(order) + 1:
            raise ValueError(f"{filepath}: the optimizer state has {len(values)} variables, "
                             f"the model's {type(optimizer).__name__} has {len(order) + 1} "
                             f"(counting every rank's shard)")
        optimizer.iterations.assign(values[0])
        owned = {(id(v), name) for v, name in order} & set(optimizer._slots)
        for (variable, slot_name), value in zip(order, values[1:]):
            if (id(variable), slot_name) not in owned:
                continue
            if tuple(value.shape) != variable.shape:
                raise ValueError(f"{filepath}: slot {slot_name!r} of {variable.name!r} has "
                                 f"shape {tuple(value.shape)}, the variable {variable.shape}")
            optimizer.get_slot(variable, slot_name).assign(value)

    def begin_variables(self, model):
        """What rank 0 broadcasts at the start of ``fit``: not the slots, each rank's own."""
        return model.weights + model.state_variables + [model.optimizer.iterations]


def register_kernels(backend):
    for name, kernel in (("parameter_broadcast", parameter_broadcast),
                         ("reduce_to_owner_start", reduce_to_owner_start),
                         ("reduce_to_owner_wait", reduce_to_owner_wait)):
        backend.kernels.setdefault(name, kernel)
