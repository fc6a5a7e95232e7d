"""The time loop shared by every recurrent layer (``RNN`` over a cell, ``SimpleRNN``, ``LSTM``,
``GRU``): initial states, the per-step walk with masking, and what comes back.

The loop is unrolled into the graph, one copy of the step per time step (see
``layers/recurrent.py`` for why). With a mask, a masked step leaves the states as they were and
repeats the previous step's output (zeros before the first real step, and always zeros with
``zero_output_for_mask``), as Keras 3 does.

``WithInitialState`` carries ``layer(x, initial_state=[...])`` as one structured input, so a
functional model records the states as inputs of the call and replays them.
"""
import numpy as np

from hiapi.graph import ops


class WithInitialState(tuple):
    """``(sequence, [state, ...])`` given to a recurrent layer's ``call`` (``_map`` keeps the
    type when a model replays the call)."""


def size_shapes(size):
    """A Keras state/output size as a list of per-tensor shapes (without the batch)."""
    if isinstance(size, (int, np.integer)):
        return [(int(size),)]
    if isinstance(size, tuple) and all(isinstance(d, (int, np.integer)) for d in size):
        return [tuple(int(d) for d in size)]
    return [shape for item in size for shape in size_shapes(item)]


def split_inputs(inputs, mask):
    """(sequence, initial states or None, the sequence's mask) from ``call``'s arguments; the
    mask of a nested sequence is its first tensor's."""
    if isinstance(mask, (list, tuple)):
        mask = flatten(mask)[0]
    if isinstance(inputs, WithInitialState):
        sequence, states = inputs
        return sequence, flatten(states), mask       # stacked cells' states may be nested
    return inputs, None, mask


def flatten(structure):
    if isinstance(structure, (list, tuple)):
        return [v for item in structure for v in flatten(item)]
    return [structure]


def rebuild(structure, items):
    """``items`` (flat) in ``structure``'s nesting of lists and tuples."""
    items = iter(items)

    def fill(node):
        if isinstance(node, (list, tuple)):
            return type(node)(fill(n) for n in node)
        return next(items)
    return fill(structure)


def time_slices(sequence, steps):
    """Step t of every tensor of a nested sequence input: (batch, ...) without the time axis."""
    flat = flatten(sequence)
    return [rebuild(sequence, [ops.squeeze(ops.slice_axis(x, 1, t, t + 1), 1) for x in flat])
            for t in range(steps)]


def zero_states(sizes, like):
    """Zeros of shape (batch,) + size for each state size (an int or a shape), with the batch
    of ``like`` (a (batch, ...) Var)."""
    base = like
    for axis in range(like.ndim - 1, 1, -1):
        base = ops.squeeze(ops.slice_axis(base, axis, 0, 1), axis)
    dtype = like.dtype if like.dtype.kind == "f" else np.dtype("float32")
    base = ops.broadcast_like(ops.constant(0.0, dtype), ops.slice_axis(base, 1, 0, 1))
    states = []
    for size in sizes:
        shape = (size,) if isinstance(size, (int, np.integer)) else tuple(size)
        zero = base
        while zero.ndim < 1 + len(shape):
            zero = ops.expand_dims(zero, -1)
        states.append(zero + ops.constant(np.zeros(shape, dtype)))
    return states


def run(step, step_inputs, states, keep, zero_output_for_mask=False):
    """Walk ``step(x_t, states) -> (output, new_states)`` over ``step_inputs``; ``keep`` holds a
    (batch, 1) boolean per step or None. Returns the per-step outputs and the last states."""
    outputs, zeros = [], None
    for x_t, keep_t in zip(step_inputs, keep):
        output, new_states = step(x_t, states)
        if keep_t is not None:
            if zeros is None:
                zeros = [ops.broadcast_like(ops.constant(0.0, o.dtype), o)
                         for o in flatten(output)]
            previous = zeros if zero_output_for_mask or not outputs else flatten(outputs[-1])
            output = rebuild(output, [_where(keep_t, o, p)
                                      for o, p in zip(flatten(output), previous)])
            new_states = [_where(keep_t, n, s) for n, s in zip(new_states, states)]
        states = list(new_states)
        outputs.append(output)
    return outputs, states


def _where(keep, new, old):
    """``new`` where the (batch, 1) ``keep`` is true, else ``old`` (any rank)."""
    while keep.ndim < new.ndim:
        keep = ops.expand_dims(keep, -1)
    return ops.where(keep, new, old)


def stack_steps(outputs):
    """Per-step outputs (each a nested structure) stacked along a new time axis 1."""
    first = outputs[0]
    columns = zip(*[flatten(o) for o in outputs])
    return rebuild(first, [ops.concatenate([ops.expand_dims(v, 1) for v in column], 1)
                           if len(outputs) > 1 else ops.expand_dims(column[0], 1)
                           for column in columns])
