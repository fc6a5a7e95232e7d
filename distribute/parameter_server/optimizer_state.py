"""The optimizer state of a parameter-server job, between the servers and the workers.

The slots (momentum, Adam's moments) and the update counter live on the servers, each server
holding those of its shard. A checkpoint must hold them all, in the order a one-process
optimizer builds them, so that the file is the one a single process (or ``Strategy``) would
write and ``load_model`` restores the optimizer exactly. So the workers keep a full copy of
the model's optimizer *as state only* (built on every trainable weight, never applied): worker
0 fills it from the servers before it saves (``ParameterServerStrategy.consolidate``), every
worker gets it with the final weights when ``fit`` ends, and on ``init`` worker 0 sends it back
to the servers, each taking its shard's slots, which is how ``BackupAndRestore`` resumes them.

On the wire a state is ``(iterations, entries)``, an entry ``(position, slot_name, array)``
with ``position`` the parameter's index in ``model.trainable_weights`` (the same on every rank,
which runs the same script), or ``None`` for state of the whole optimizer (Nadam's running
product), which every server keeps alike and the first server's copy stands for.
"""
import numpy as np


def shard_state(optimizer, layout):
    """A server's part: its slots by model position, and its update counter."""
    entries = []
    for (variable_id, name), slot in optimizer._slots.items():
        position = None if variable_id is None else layout.position(variable_id)
        entries.append((position, name, slot.numpy()))
    return int(optimizer.iterations.numpy()), entries


def full_state(optimizer, variables):
    """A worker's copy as entries for every parameter (``None`` if it holds none yet: a job
    that never consolidated starts the servers' slots from zero, as one process would)."""
    if not optimizer.built:
        return None
    position = {id(v): i for i, v in enumerate(variables)}
    return [(None if variable_id is None else position[variable_id], name, slot.numpy())
            for (variable_id, name), slot in optimizer._slots.items()]


def take_state(optimizer, variables, entries, first=True):
    """Write a server's part into a worker's full copy (built on ``variables`` on first use).
    ``first``: whether this server's optimizer-wide entries count (only the first server's).
    The update counter is the caller's: the largest of the servers'."""
    if not optimizer.built:
        optimizer.build(list(variables))
    for position, name, value in entries:
        if position is None and not first:
            continue
        key = (None if position is None else id(variables[position]), name)
        _assign(optimizer._slots, key, value, name)


def load_shard(optimizer, layout, entries):
    """On a server: take the slots it owns from worker 0's full copy (``init``)."""
    owned = {layout.position(variable_id): variable_id
             for variable_id, _ in optimizer._slots if variable_id is not None}
    for position, name, value in entries:
        if position is None:
            key = (None, name)
        elif position in owned:
            key = (owned[position], name)
        else:
            continue                       # another server's shard
        if key in optimizer._slots:
            _assign(optimizer._slots, key, value, name)


def _assign(slots, key, value, name):
    if key not in slots:
        raise ValueError(f"ParameterServerStrategy: the optimizer state has a slot {name!r} "
                         f"this model's optimizer does not build (was the optimizer changed "
                         f"between save and restore?)")
    slot = slots[key]
    if tuple(np.shape(value)) != tuple(slot.shape):
        raise ValueError(f"ParameterServerStrategy: optimizer slot {slot.name!r} has shape "
                         f"{tuple(slot.shape)}, the state sent for it {tuple(np.shape(value))}")
    slot.assign(value)
