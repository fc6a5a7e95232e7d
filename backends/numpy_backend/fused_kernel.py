"""The numpy evaluation of a fused elementwise program, in chunks of at most ``CHUNK_BYTES``.

Each step runs its own op's kernel. Evaluating the whole program at once would need a buffer
per intermediate step the size of the output, outside the memory plan: on a deep MLP that was
over a gigabyte of scratch, more than half the process's memory. Instead the output is cut
into chunks (along the outermost axis whose trailing block fits the budget; leading axes are
walked one index at a time) and the program runs chunk by chunk, each step writing into a
slot of the op's planned workspace (``backends/workspace.py``: ``program_scratch`` declares
its size, so the memory plan holds it), or in place into the slot of a step input that dies
there, and the last step writing into the planned output itself. The temporary is then at most
one chunk per step, whatever the batch; the chunks stay in cache between steps. A step whose
kernel declares scratch of its own (``where``'s bit-select mask) gets it for one chunk in the
same workspace. Elementwise kernels compute each element independently, so the results are
those of the whole-array evaluation bit for bit.
"""
import math

import numpy as np

from hiapi.backends.numpy_backend.registry import backend
from hiapi.backends.workspace import ALIGN, aligned, take

CHUNK_BYTES = 1 << 18       # per step; a few steps' chunks fit in L2

# kernels that give the right answer when the output buffer is one of the inputs
ALIAS_SAFE = {"negative", "exp", "log", "sqrt", "tanh", "abs", "add", "subtract", "multiply",
              "divide", "power", "maximum", "minimum", "relu", "where"}


def program_scratch(shapes, dtypes, attrs):
    """Workspace bytes of the chunked program (output shape first, then the inputs'): the
    slots of one chunk per step that does not run in place."""
    step_dtypes = [dtype for _, dtype in attrs["shapes"]]
    return _plan(attrs["program"], step_dtypes, shapes[1:], shapes[0], dtypes[1:])[-1]


@backend.register("fused_elementwise", scratch=program_scratch)
def fused_elementwise(out, *inputs, program, shapes, scratch, workspace=None):
    key = ("numpy",) + tuple((a.shape, a.dtype.str) for a in inputs)
    plan = scratch.get(key)                 # per node and shapes: a few small tuples
    if plan is None:
        plan = scratch[key] = _plan(program, [dtype for _, dtype in shapes],
                                    [a.shape for a in inputs], out.shape,
                                    [a.dtype for a in inputs])
    steps, slots, calls, axis, rows, total = plan
    space = take(workspace, (total,), np.uint8)
    last, ndim = len(program) - 1, out.ndim
    for chunk in _chunks(out.shape, axis, rows):
        values = []
        for index, (kernel, attrs, refs, own) in enumerate(calls):
            args = [_part(inputs[k], ndim, chunk) if kind == "input" else values[k]
                    for kind, k in refs]
            shape, dtype = steps[index]
            if index == last:
                target = out[chunk] if chunk else out
            elif slots[index][0] == "workspace":
                target = _slot(space, slots[index][1], _part_shape(shape, ndim, chunk), dtype)
            else:                                   # in place into that step's value
                target = values[slots[index][1]]
            if own is None:
                kernel(target, *args, **attrs)
            else:                                   # the step's own scratch, for this chunk
                kernel(target, *args, workspace=space[own[0]:own[0] + own[1]], **attrs)
            values.append(target)


def _plan(program, dtypes, input_shapes, out_shape, input_dtypes):
    """Each step's (shape, dtype); where it writes: ``("workspace", byte offset)`` or
    ``("step", k)``, the value of a step input it can overwrite (each step value has one
    reader, so it dies at the step that reads it); each step's kernel, attributes, argument
    refs and own scratch ``(byte offset, bytes)`` or None, looked up once rather than per
    chunk; the chunked axis, the rows per chunk and the workspace bytes."""
    steps = []
    for index, (op, refs) in enumerate(program):
        shape = np.broadcast_shapes(*[input_shapes[k] if kind == "input" else steps[k][0]
                                      for kind, k in refs])
        steps.append((shape, np.dtype(dtypes[index])))
    budget = max(1, CHUNK_BYTES // max(dtype.itemsize for _, dtype in steps))
    axis = next((a for a in range(len(out_shape) + 1) if math.prod(out_shape[a + 1:]) <= budget),
                len(out_shape))
    rows = max(1, budget // math.prod(out_shape[axis + 1:])) if axis < len(out_shape) else 0
    chunk = _first_chunk(out_shape, axis, rows)
    slots, total = [], 0
    for index, (op, refs) in enumerate(program):
        shape, dtype = steps[index]
        if index == len(program) - 1:
            slots.append(("output", None))          # the last step writes the output itself
            continue
        # ``where`` in place into its ``a`` would need a mask (where_kernel.py): only ``b``
        candidates = refs[2:] if op.name == "where" else refs
        donors = [k for kind, k in candidates if kind == "step" and steps[k][0] == shape and
                  steps[k][1] == dtype] if op.name in ALIAS_SAFE else []
        if donors:
            slots.append(("step", donors[0]))
            continue
        nbytes = math.prod(_part_shape(shape, len(out_shape), chunk)) * dtype.itemsize
        slots.append(("workspace", total))
        total += -(-nbytes // ALIGN) * ALIGN
    calls = []
    for index, (op, refs) in enumerate(program):
        own = _step_scratch(op, refs, steps, index, (input_shapes, input_dtypes),
                            out_shape, chunk)
        if own:
            own, total = (total, own), total + aligned(own)
        calls.append((backend.kernels[op.name], op.attrs(), refs, own or None))
    return steps, slots, calls, axis, rows, total


def _step_scratch(op, refs, steps, index, inputs, out_shape, chunk):
    """Bytes of the scratch the step's kernel declares for the largest chunk (0: none);
    ``inputs``: the program inputs' shapes and dtypes."""
    declare = backend.scratch.get(op.name)
    if declare is None:
        return 0
    ndim = len(out_shape)
    args = [(inputs[0][k], inputs[1][k]) if kind == "input" else steps[k] for kind, k in refs]
    shapes = [steps[index][0]] + [shape for shape, _ in args]
    dtypes = [steps[index][1]] + [dtype for _, dtype in args]
    return int(declare([_part_shape(s, ndim, chunk) for s in shapes], dtypes, op.attrs()))


def _first_chunk(shape, axis, rows):
    """The largest chunk: the first ``rows`` along ``axis``, the first index before it."""
    if axis >= len(shape):
        return ()
    return (slice(0, 1),) * axis + (slice(0, min(rows, shape[axis])),)


def _chunks(shape, axis, rows):
    """Index tuples (slices, so no axis drops) into an array of ``shape``: ``rows`` indices
    along ``axis`` at a time, one at a time along the axes before it, whole after it."""
    if axis >= len(shape):
        yield ()
        return
    for outer in np.ndindex(*shape[:axis]):
        for start in range(0, shape[axis], rows):
            yield tuple(slice(i, i + 1) for i in outer) + (slice(start, start + rows),)


def _part(array, ndim, chunk):
    """``array``'s share of the chunk ``chunk`` of an ``ndim``-d output that it broadcasts
    against: its axes are the output's trailing ones, and a length-1 axis is taken whole."""
    offset = ndim - array.ndim
    index = tuple(slice(None) if array.shape[a - offset] == 1 else part
                  for a, part in enumerate(chunk) if a >= offset)
    return array[index] if index else array


def _part_shape(shape, ndim, chunk):
    offset = ndim - len(shape)
    return tuple(len(range(*chunk[j + offset].indices(size)))
                 if j + offset < len(chunk) and size != 1 else size
                 for j, size in enumerate(shape))


def _slot(space, offset, shape, dtype):
    nbytes = math.prod(shape) * dtype.itemsize
    return space[offset:offset + nbytes].view(dtype).reshape(shape)
