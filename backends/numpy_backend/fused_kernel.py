"""The numpy evaluation of a fused elementwise program: each step runs its own op's kernel into
a scratch buffer kept between calls (no allocation in steady state), or in place into the
buffer of a step input that dies there when the kernel is safe to alias."""
import numpy as np

from hiapi.backends.numpy_backend import backend

# kernels that give the right answer when the output buffer is one of the inputs
ALIAS_SAFE = {"negative", "exp", "log", "sqrt", "tanh", "abs", "add", "subtract", "multiply",
              "divide", "power", "maximum", "minimum", "relu", "where"}


@backend.register("fused_elementwise")
def fused_elementwise(out, *inputs, program, shapes, scratch):
    key = tuple((a.shape, a.dtype.str) for a in inputs)
    buffers = scratch.get(key)
    if buffers is None:
        buffers = scratch[key] = _plan(program, [dtype for _, dtype in shapes], inputs)
    values, last = [], len(program) - 1
    for index, (op, refs) in enumerate(program):
        args = [inputs[k] if kind == "input" else values[k] for kind, k in refs]
        target = out if index == last else buffers[index]
        if isinstance(target, int):                 # in place into that step's buffer
            target = values[target]
        backend.kernels[op.name](target, *args, **op.attrs())
        values.append(target)


def _plan(program, dtypes, inputs):
    """A scratch buffer per step, or the index of a step input whose buffer it can write into
    (each step value has one reader, so it dies at the step that reads it)."""
    shapes, buffers = [], []
    for index, (op, refs) in enumerate(program):
        shape = np.broadcast_shapes(*[inputs[k].shape if kind == "input" else shapes[k]
                                      for kind, k in refs])
        shapes.append(shape)
        donors = [k for kind, k in refs if kind == "step" and shapes[k] == shape and
                  dtypes[k] == dtypes[index]] if op.name in ALIAS_SAFE else []
        buffers.append(donors[0] if donors else np.empty(shape, dtypes[index]))
    return buffers
