"""``Function``: a compiled graph you call with arrays.

``Function(inputs, outputs, updates)`` takes placeholder Vars as inputs, output Vars, and
``(Variable, new_value_Var)`` update pairs applied after each call. It compiles one
``Executable`` per signature of concrete input shapes and caches it, so a smaller last batch
simply compiles (once) a second executable::

    x = placeholder((None, 2))
    f = Function([x], x.sum(axis=1) * 2.0)
    f(np.ones((3, 2)))   # array([4., 4., 4.], dtype=float32)
"""
import numpy as np

from hiapi.runtime import environment, thread_tuner
from hiapi.backends import get_backend
from hiapi.graph.executor import Executable
from hiapi.graph.op import as_var
from hiapi.graph.ops.sources import Placeholder
from hiapi.graph.var import Var


class Function:
    def __init__(self, inputs, outputs, updates=(), name="function", memory=None,
                 recompute=None, forward_outputs=None, tuned=False):
        """``recompute``: None, "sublinear" (the smallest plan among checkpoint sets chosen
        by bytes, ``memory/checkpoints.py``), or a byte budget (the cheapest recomputation
        whose planned memory fits it). The first
        ``forward_outputs`` outputs are the forward pass (default: all outputs); everything
        else (gradients, updates) reads recomputed copies of forward values. ``tuned``: each
        compiled executable times its calls and picks the thread count for the load
        (``hiapi.runtime.thread_tuner``; the train, test and predict steps of models)."""
        self.name = name
        self.memory = memory
        self.recompute = recompute
        self.inputs = list(inputs)
        for var in self.inputs:
            if not isinstance(var, Var) or not isinstance(var.op, Placeholder):
                raise TypeError(f"Function {name!r}: inputs must be placeholders, got {var!r}")
        self._single = isinstance(outputs, Var)
        self.outputs = [outputs] if self._single else [as_var(v) for v in outputs]
        self.updates = [(variable, self._check_update(variable, value))
                        for variable, value in updates]
        self.forward_outputs = len(self.outputs) if forward_outputs is None else forward_outputs
        self.tuned = tuned
        self._executables = {}
        self._optimized = None
        self.pass_stats = None
        # (backend, (type, shape, dtype) per input, executable) of the last call: a batch of
        # the same kind is the backend's own array already, checked, with a known executable
        self._last = None

    def _check_update(self, variable, value):
        value = as_var(value, variable.dtype)
        if len(value.shape) != len(variable.shape) or any(
                d is not None and d != v for d, v in zip(value.shape, variable.shape)):
            raise ValueError(f"Function {self.name!r}: update of {variable.name!r} has shape "
                             f"{value.shape}, the variable has shape {variable.shape}")
        if value.dtype != variable.dtype:
            from hiapi.graph.ops import cast
            value = cast(value, variable.dtype)
        return value

    def __call__(self, *arrays):
        if len(arrays) != len(self.inputs):
            raise ValueError(f"Function {self.name!r} takes {len(self.inputs)} inputs, "
                             f"got {len(arrays)}")
        backend = get_backend()
        last = self._last
        if last is not None and last[0] is backend and all(map(_same_kind, arrays, last[1])):
            fed, executable = arrays, last[2]       # the last call's arrays' kind: checked then
        else:
            fed = [self._coerce(var, array, backend) for var, array in zip(self.inputs, arrays)]
            executable = self.executable(tuple(a.shape for a in fed))    # shapes are tuples
            self._last = (backend, [(type(a), a.shape, a.dtype) for a in fed], executable)
        tuner = executable.tuner
        if tuner is None or not thread_tuner.adapting():
            results = executable.run(fed)
        else:
            start = tuner.begin()
            results = executable.run(fed)
            tuner.end(start)
        return results[0] if self._single else results

    def executable(self, shapes):
        """The compiled graph for these concrete input shapes (compiled on first use)."""
        executable = self._executables.get(shapes)
        if executable is None:
            outputs, updates = self.optimized()
            if self.recompute is None:
                executable = self._compile(outputs, updates, shapes)
            else:
                executable = self._compile_with_recomputation(outputs, updates, shapes)
            # what this step learns about thread counts lives as long as it does
            executable.tuner = thread_tuner.StepTuner() if self.tuned else None
            self._executables[shapes] = executable
        return executable

    def _compile(self, outputs, updates, shapes, recomputed=0, memory=None):
        executable = Executable(self.inputs, outputs, updates, shapes, get_backend(),
                                memory=memory or self.memory or environment.memory())
        executable.recomputed_values = recomputed
        return executable

    def _compile_with_recomputation(self, outputs, updates, shapes):
        from hiapi.graph.memory import checkpoints
        forward, rest = outputs[:self.forward_outputs], outputs[self.forward_outputs:]
        budget = None if self.recompute == "sublinear" else parse_bytes(self.recompute)
        chosen = checkpoints.choose(forward, rest, updates, dict(zip(self.inputs, shapes)),
                                    budget, self.name)
        # recomputation only pays with a memory plan, so it always plans
        executable = self._compile(forward + chosen.rest, chosen.updates, shapes,
                                   chosen.copies, memory="plan")
        executable.forward_outputs = len(forward)     # for the report's lower-bound line
        return executable

    def optimized(self):
        """Outputs and updates after the graph passes (run once, on the symbolic graph)."""
        if self._optimized is None:
            from hiapi.graph.passes import dead_code, optimize
            updates = dead_code.live_updates(self.updates)
            backend = get_backend()
            roots, self.pass_stats = optimize(self.outputs + [v for _, v in updates],
                                              float32_ops=backend.float32_ops,
                                              rewrites=backend.rewrites)
            outputs = roots[:len(self.outputs)]
            updates = [(variable, value) for (variable, _), value in
                       zip(updates, roots[len(self.outputs):])]
            self._optimized = (outputs, updates)
        return self._optimized

    def _coerce(self, var, array, backend):
        array = np.asarray(array) if not hasattr(array, "__array_namespace__") else array
        declared = var.op.shape
        if array.ndim != len(declared) or any(
                d is not None and d != a for d, a in zip(declared, array.shape)):
            name = var.name or "input"
            raise ValueError(f"Function {self.name!r}: {name} expects shape "
                             f"{_fmt(declared)}, got an array of shape {array.shape}")
        return backend.asarray(array, dtype=var.dtype)


def _same_kind(array, kind):
    """Whether ``array`` is of the type, shape and dtype in ``kind`` (so ``_coerce`` would
    return it as it is): a loop's batches skip the checks and the executable's lookup."""
    return type(array) is kind[0] and array.shape == kind[1] and array.dtype == kind[2]


def _fmt(shape):
    return "(" + ", ".join("None" if d is None else str(d) for d in shape) + \
        ("," if len(shape) == 1 else "") + ")"


def parse_bytes(value):
    """Bytes from an int or a string like "2GB", "512 MiB", "100kb"."""
    if isinstance(value, (int, float)):
        return int(value)
    text = str(value).strip().upper().replace(" ", "")
    units = {"TIB": 2**40, "GIB": 2**30, "MIB": 2**20, "KIB": 2**10, "TB": 10**12,
             "GB": 10**9, "MB": 10**6, "KB": 10**3, "B": 1}
    for unit, factor in units.items():
        if text.endswith(unit):
            try:
                return int(float(text[:-len(unit)]) * factor)
            except ValueError:
                break
    raise ValueError(f"cannot read a memory size from {value!r}: use bytes or e.g. '2GB'")
