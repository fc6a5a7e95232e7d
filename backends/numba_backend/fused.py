"""Fused elementwise programs compiled to one numba loop.

The program (see ``hiapi.graph.passes.fusion``) becomes the source of a function that walks the
output once; each step is a scalar expression, so intermediates live in registers, not arrays.
The source is written to the user cache and imported, so numba's ``cache=True`` keeps the
machine code on disk between runs. An input may have the output's shape, be a single value, or
match the output's trailing axes (a bias over channels: read at ``i % size``); programs with an
op that has no scalar form here, or with other broadcasting, run on the numpy kernels instead.
"""
import hashlib
import importlib.util
import re
import sys

import numpy as np

from hiapi import config
from hiapi.backends.numba_backend import backend
from hiapi.backends.numpy_backend.fused_kernel import fused_elementwise as numpy_fused

# op name -> scalar expression over the argument names a, b, c
EXPRESSIONS = {
    "negative": "-a", "exp": "np.exp(a)", "log": "np.log(a)", "sqrt": "np.sqrt(a)",
    "tanh": "np.tanh(a)", "abs": "abs(a)", "relu": "max(a, 0)",
    "sigmoid": "(1.0 / (1.0 + np.exp(-a)) if a >= 0 else np.exp(a) / (1.0 + np.exp(a)))",
    "add": "a + b", "subtract": "a - b", "multiply": "a * b", "divide": "a / b",
    "power": "a ** b", "maximum": "max(a, b)", "minimum": "min(a, b)",
    "greater": "a > b", "greater_equal": "a >= b", "less": "a < b", "less_equal": "a <= b",
    "equal": "a == b", "not_equal": "a != b", "where": "(b if a else c)",
}

_compiled = {}


FULL, SCALAR, TRAILING = "full", "scalar", "trailing"


def _read(k, mode):
    return {FULL: f"in{k}[i]", SCALAR: f"in{k}[0]", TRAILING: f"in{k}[i % in{k}.size]"}[mode]


def _source(program, modes, name, dtypes):
    args = ", ".join(f"in{k}" for k in range(len(modes)))
    lines = ["import numpy as np", "from numba import njit, prange", "",
             "@njit(parallel=True, cache=True, fastmath=False)",
             f"def {name}(out, {args}):",
             "    for i in prange(out.size):"]
    for k, mode in enumerate(modes):
        lines.append(f"        x{k} = {_read(k, mode)}")
    for j, (op, refs) in enumerate(program):
        names = [f"x{k}" if kind == "input" else f"s{k}" for kind, k in refs]
        expression = _substitute(EXPRESSIONS[op.name], names)
        dtype = np.dtype(dtypes[j])
        cast = "bool" if dtype.kind == "b" else f"np.{dtype.name}"
        lines.append(f"        s{j} = {cast}({expression})")
    lines.append(f"        out[i] = s{len(program) - 1}")
    return "\n".join(lines) + "\n"


def _substitute(expression, names):
    """Put argument names in place of a, b, c (as whole words)."""
    mapping = dict(zip("abc", names))
    return re.sub(r"\b([abc])\b", lambda m: mapping.get(m.group(1), m.group(1)), expression)


def _load(source, name):
    folder = config.cache_dir() / "numba"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.py"
    if not path.exists() or path.read_text() != source:    # atomic: other processes may race
        from hiapi.saving.atomic import atomic_write
        atomic_write(path, lambda handle: handle.write(source.encode()))
    spec = importlib.util.spec_from_file_location(f"hiapi_numba_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return getattr(module, name)


def compiled_program(program, shapes, modes):
    """The numba function for a program and how each input is read (or None)."""
    if any(op.name not in EXPRESSIONS for op, _ in program):
        return None
    dtypes = [dtype for _, dtype in shapes]
    key = (tuple((op.key(), refs) for op, refs in program), tuple(map(str, dtypes)), modes)
    if key not in _compiled:
        name = "fused_" + hashlib.sha1(repr(key).encode()).hexdigest()[:16]
        _compiled[key] = _load(_source(program, modes, name, dtypes), name)
    return _compiled[key]


def _mode(array, out):
    """How a loop over ``out``'s flat index reads ``array``, or None if it cannot."""
    if array.shape == out.shape:
        return FULL
    if array.size == 1:
        return SCALAR
    core = array.shape[next((k for k, d in enumerate(array.shape) if d != 1), array.ndim):]
    if len(core) <= out.ndim and out.shape[out.ndim - len(core):] == core:
        return TRAILING
    return None


@backend.register("fused_elementwise")
def fused_elementwise(out, *inputs, program, shapes, scratch):
    modes = tuple(_mode(a, out) for a in inputs)
    if None not in modes and out.flags.c_contiguous:
        function = compiled_program(program, shapes, modes)
        if function is not None:
            flat = [np.ascontiguousarray(a).reshape(-1) for a in inputs]
            function(out.reshape(-1), *flat)
            return
    numpy_fused(out, *inputs, program=program, shapes=shapes, scratch=scratch)
