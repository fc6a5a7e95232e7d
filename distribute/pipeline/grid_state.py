"""The optimizer state of a pipeline x tensor grid (``Strategy(pipeline_stages=K,
tensor_parallel=T)``), whole for a file and back.

Each rank holds the slots of its own stage's parameters only, and of those the tensor rewrite
split, only its slice. Saving takes two steps, each an existing one: the T parts of a stage
join their slices (an allgather in the stage's tensor group, as ``Strategy(tensor_parallel=T)``
joins them), then each stage's first rank sends the whole slots to rank 0 in the order an
unsharded optimizer keeps them (stage ownership, as ``sharding.py`` gathers ZeRO's shards).
Restoring is local: every rank reads the whole state and keeps its stage's slots, sliced as
the rewrite slices the weights. So a grid's file equals a single-process one.
"""
import numpy as np

from hiapi.distribute.tensor_parallel.strategy import join, own_slice


class GridOptimizerState:
    """``optimizer.sharded_by`` of a pipeline x tensor grid; ``ownership`` is the pipeline's
    ``StageOwnership`` (world ranks owning each stage's variables), whose gathered snapshot,
    error and release this reuses."""

    def __init__(self, strategy, ownership):
        self.strategy, self.ownership = strategy, ownership

    def _own_stage(self):
        return {id(p) for p in self.strategy.stage.params}

    def consolidate(self, optimizer, root=0):
        """Collective over every rank (the checkpoint callbacks and the end of ``fit`` run it):
        rank ``root`` keeps the whole state until the next train step."""
        strategy, ownership = self.strategy, self.ownership
        ownership.snapshot = None
        if not optimizer.built:
            return
        slices, own = strategy.rewrite.slices, self._own_stage()
        order = ownership._full_order(optimizer)
        whole_slots = {}
        for variable, slot_name in order:        # 1. a stage's parts join their slices
            if id(variable) not in own:
                continue
            if id(variable) in slices:
                _, local, axis = slices[id(variable)]
                whole_slots[(id(variable), slot_name)] = join(
                    strategy.tensor_communicator, strategy.tensor_parallel,
                    optimizer.get_slot(local, slot_name).numpy(), variable.shape, axis)
            else:
                whole_slots[(id(variable), slot_name)] = \
                    optimizer.get_slot(variable, slot_name).numpy().copy()
        state = [optimizer.iterations.numpy().copy()]
        for variable, slot_name in order:        # 2. each stage's owner to root
            owner = strategy._stage_of[id(variable)]
            buffer = whole_slots[(id(variable), slot_name)] if strategy.rank == owner else \
                np.empty(variable.shape, variable.dtype)
            if owner != root:
                strategy.communicator.bcast(buffer, root=owner)
            state.append(buffer if strategy.rank == root else None)
        ownership.snapshot = (int(state[0]), state) if strategy.rank == root else None

    def release(self):
        self.ownership.release()

    def consolidated_state(self, optimizer, what):
        return self.ownership.consolidated_state(optimizer, what)

    def restore(self, optimizer, values, filepath):
        """This rank's slots (its stage's, its slice of the split ones) from a whole state."""
        strategy = self.strategy
        order = self.ownership._full_order(optimizer)
        if len(values) != len(order) + 1:
            raise ValueError(f"{filepath}: the optimizer state has {len(values)} variables, "
                             f"the model's {type(optimizer).__name__} has {len(order) + 1}")
        optimizer.iterations.assign(values[0])
        slices, own = strategy.rewrite.slices, self._own_stage()
        for (variable, slot_name), value in zip(order, values[1:]):
            if id(variable) not in own:
                continue
            if tuple(value.shape) != variable.shape:
                raise ValueError(f"{filepath}: slot {slot_name!r} of {variable.name!r} has "
                                 f"shape {tuple(value.shape)}, the variable {variable.shape}")
            if id(variable) in slices:
                _, local, axis = slices[id(variable)]
                value = own_slice(value, strategy.tensor_parallel, strategy.part, axis)
                optimizer.get_slot(local, slot_name).assign(value)
            else:
                optimizer.get_slot(variable, slot_name).assign(value)
