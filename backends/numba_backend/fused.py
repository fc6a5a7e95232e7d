"""Fused elementwise programs compiled to one numba loop.

The program (see ``hiapi.graph.passes.fusion``) becomes the source of a function that walks the
output once; each step is a scalar expression, so intermediates live in registers, not arrays.
The source is written to the user cache and imported, so numba's ``cache=True`` keeps the
machine code on disk between runs. An input may have the output's shape, be a single value,
match the output's trailing axes (a bias over channels: the loop then runs over rows and
columns and reads it by column), or match all but the last axis with a length-1 last axis (a
per-row value such as softmax's maximum and sum: read by row); programs with an op that has no
scalar form here, or with other broadcasting, run on the numpy kernels instead. Small outputs
run on one thread. Subnormal values are flushed to zero inside the loops
(``flush_denormals.py``: an optimizer slot stuck below 1.2e-38 slowed every step).
"""
import hashlib
import importlib.util
import math
import operator
import re
import sys

import numpy as np

from hiapi.runtime import environment
from hiapi.runtime.dtypes import is_low_precision
from hiapi.runtime.atomic import atomic_write
from hiapi.backends.numba_backend import flush_denormals
from hiapi.backends.numba_backend.registry import backend
from hiapi.backends.numpy_backend.fused_kernel import fused_elementwise as numpy_fused
from hiapi.backends.numpy_backend.fused_kernel import program_scratch as numpy_scratch

# op name -> scalar expression over the argument names a, b, c
EXPRESSIONS = {
    "negative": "-a", "exp": "np.exp(a)", "log": "np.log(a)", "sqrt": "np.sqrt(a)",
    "tanh": "np.tanh(a)", "abs": "abs(a)", "relu": "max(a, 0)",
    "sigmoid": "(1.0 / (1.0 + np.exp(-a)) if a >= 0 else np.exp(a) / (1.0 + np.exp(a)))",
    "add": "a + b", "subtract": "a - b", "multiply": "a * b", "divide": "a / b",
    "power": "a ** b", "maximum": "max(a, b)", "minimum": "min(a, b)",
    "greater": "a > b", "greater_equal": "a >= b", "less": "a < b", "less_equal": "a <= b",
    "equal": "a == b", "not_equal": "a != b", "where": "(b if a else c)",
    "cast": "a",            # the step's result is converted to its dtype (``_function``)
}

_compiled = {}


# How the loop reads an input: the output's element i, the one value, (broadcast over the
# output's trailing axes) column j of a row, or j modulo its size when it is shorter than a
# row, or (one value per row of the last axis, shape (..., 1)) element ``row``.
FULL, SCALAR, TRAILING, TRAILING_SHORTER = "full", "scalar", "trailing", "trailing_shorter"
PER_ROW = "per_row"
ROWS = (TRAILING, PER_ROW)          # modes that need the rows x columns loop
# An input that is the output's own memory (the op runs in place: an optimizer's update of a
# weight or slot) is read as ``out[i]``. Read through its own argument, LLVM cannot tell that
# the two arrays coincide exactly, its run-time overlap check fails, and it runs the scalar
# copy of the loop: Adam's weight update over 784x128 float32 took 148 us in place and 34 us
# into another array, the same 34 us read as out[i].
IN_PLACE = "in_place"


def _read(k, mode):
    return {FULL: f"in{k}[i]", SCALAR: f"in{k}[0]", TRAILING: f"in{k}[j]",
            TRAILING_SHORTER: f"in{k}[j % in{k}.size]", PER_ROW: f"in{k}[row]",
            IN_PLACE: "out[i]"}[mode]


# Below this many elements a fused loop runs on one thread: starting numba's workqueue threads
# costs ~50 us, and on 2 cores the serial loop wins up to about a million float32 elements
# (measured: 262k elements 60 us serial, 126 us parallel; 4M elements 2.9 ms vs 2.0 ms).
PARALLEL_MIN = 1 << 20


def _source(program, modes, name, dtypes):
    """Two functions over the same loop body: ``name`` (parallel) and ``name_serial``."""
    header = "import numpy as np\nfrom numba import njit, prange\n"
    if flush_denormals.SUPPORTED:
        header += ("from hiapi.backends.numba_backend.flush_denormals import "
                   "flush_denormals_begin, flush_denormals_end\n")
    return header + "\n" + "\n\n".join(
        _function(program, modes, function_name, dtypes, parallel)
        for function_name, parallel in ((name, True), (f"{name}_serial", False)))


def _function(program, modes, name, dtypes, parallel):
    """A flat loop over the output; with trailing broadcasts, rows x columns (``columns`` is the
    longest trailing input's size), so those inputs are read by column, not by a modulo."""
    args = ", ".join(f"in{k}" for k in range(len(modes)))
    loop = "prange" if parallel else "range"
    # numpy's error model: a float division by zero gives inf or NaN, as numpy's kernels do.
    # Python's (numba's default) raised ZeroDivisionError out of the step instead, and its
    # check of every divisor kept LLVM from vectorising any loop that divides: Adam's update
    # of a 784x128 weight, ``w - lr * m / (sqrt(v) + eps)``, took 150 us against 20
    lines = [f"@njit(parallel={parallel}, cache=True, fastmath=False, error_model='numpy')",
             f"def {name}(out, columns, {args}):"]
    if flush_denormals.SUPPORTED:       # subnormals flushed to zero while the loop runs
        lines.append("    mxcsr = flush_denormals_begin()")
    indent = "        "
    per_row = set()         # inputs and steps with one value per row: computed once a row
    if any(mode in ROWS for mode in modes):
        # an unsigned flat index: with a signed one numba checks for negative indices
        # (wraparound) on every read, which keeps LLVM from vectorising the loop; measured 10x
        # slower for bias + relu over 256x1024 (258 against 25 us on one thread)
        lines += [f"    for row in {loop}(out.size // columns):",
                  "        base = row * columns"]
        per_row = _row_invariant(program, modes)
        lines += _body(program, modes, dtypes, indent, lambda ref: ref in per_row)
        lines += ["        for j in range(columns):",
                  "            i = np.uint64(base + j)"]
        indent += "    "
    else:
        lines.append(f"    for i in {loop}(out.size):")
    lines += _body(program, modes, dtypes, indent, lambda ref: ref not in per_row)
    lines.append(f"{indent}out[i] = s{len(program) - 1}")
    if flush_denormals.SUPPORTED:
        lines.append("    flush_denormals_end(mxcsr)")
    return "\n".join(lines) + "\n"


def _row_invariant(program, modes):
    """The refs (``("input", k)``, ``("step", j)``) whose value is the same along a row: inputs
    read by row or single values, and steps of those only. A softmax's gradient reads
    ``exp(s - log(total))`` with ``total`` one per row: its log was taken at every element
    (18.9 us for 32x10), now once a row."""
    found = {("input", k) for k, mode in enumerate(modes) if mode in (PER_ROW, SCALAR)}
    for j, (_, refs) in enumerate(program):
        if all(ref in found for ref in refs):
            found.add(("step", j))
    return found


def _body(program, modes, dtypes, indent, chosen):
    """The lines that read the ``chosen`` inputs and compute the ``chosen`` steps."""
    lines = [f"{indent}x{k} = {_read(k, mode)}" for k, mode in enumerate(modes)
             if chosen(("input", k))]
    for j, (op, refs) in enumerate(program):
        if not chosen(("step", j)):
            continue
        names = [f"x{k}" if kind == "input" else f"s{k}" for kind, k in refs]
        expression = _substitute(EXPRESSIONS[op.name], names)
        dtype = np.dtype(dtypes[j])
        cast = "bool" if dtype.kind == "b" else f"np.{dtype.name}"
        lines.append(f"{indent}s{j} = {cast}({expression})")
    return lines


def _substitute(expression, names):
    """Put argument names in place of a, b, c (as whole words)."""
    mapping = dict(zip("abc", names))
    return re.sub(r"\b([abc])\b", lambda m: mapping.get(m.group(1), m.group(1)), expression)


def _load(source, name):
    folder = environment.cache_dir() / "numba"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.py"
    if not path.exists() or path.read_text() != source:    # atomic: other processes may race
        atomic_write(path, lambda handle: handle.write(source.encode()))
    spec = importlib.util.spec_from_file_location(f"hiapi_numba_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return getattr(module, name), getattr(module, f"{name}_serial")


def compiled_program(program, shapes, modes):
    """The (parallel, serial) numba functions for a program and how each input is read, or
    None when an op has no scalar form."""
    if any(op.name not in EXPRESSIONS for op, _ in program):
        return None
    dtypes = [dtype for _, dtype in shapes]
    key = (tuple((op.key(), refs) for op, refs in program), tuple(map(str, dtypes)), modes)
    if key not in _compiled:
        name = "fused_" + hashlib.sha1(repr(key).encode()).hexdigest()[:16]
        _compiled[key] = _load(_source(program, modes, name, dtypes), name)
    return _compiled[key]


def _modes(shapes, out_shape):
    """How a loop over an output of ``out_shape`` reads each input of ``shapes`` (None where
    it cannot), and the row length."""
    modes, columns, ndim = [], 1, len(out_shape)
    for shape in shapes:
        size = math.prod(shape)
        if shape == out_shape:
            modes.append(FULL)
        elif size == 1:
            modes.append(SCALAR)
        elif ndim >= 2 and shape == out_shape[:-1] + (1,):
            modes.append(PER_ROW)
        else:
            core = shape[next(k for k, d in enumerate(shape) if d != 1):]
            fits = len(core) <= ndim and out_shape[ndim - len(core):] == core
            modes.append(TRAILING if fits else None)
            columns = max(columns, size) if fits else columns
    if PER_ROW in modes:                # rows are the last axis: a trailing input must fit one
        columns = max(columns, out_shape[-1])
        modes = [None if m == PER_ROW and columns != out_shape[-1] else m for m in modes]
    modes = [TRAILING_SHORTER if m == TRAILING and math.prod(shape) < columns else m
             for m, shape in zip(modes, shapes)]
    return tuple(modes), columns


def _runs_as_loop(modes, program, shapes):
    """Whether a program compiles to one loop (else the numpy evaluation): every input read in
    a way the loop knows (``modes``), every step a scalar expression, and no step's value a
    16-bit float (numba compiles none: a cast to float16 runs on numpy's kernels)."""
    return None not in modes and all(op.name in EXPRESSIONS for op, _ in program) and \
        not any(is_low_precision(np.dtype(dtype)) for _, dtype in shapes)


def program_scratch(shapes, dtypes, attrs):
    """None for a program that runs as one loop; the numpy evaluation's chunk slots else."""
    modes, _ = _modes([tuple(s) for s in shapes[1:]], tuple(shapes[0]))
    if _runs_as_loop(modes, attrs["program"], attrs["shapes"]):
        return 0
    return numpy_scratch(shapes, dtypes, attrs)


def _in_place(out, inputs, modes):
    """The inputs read element by element that are the output's own memory."""
    start = None
    found = []
    for k, (array, mode) in enumerate(zip(inputs, modes)):
        if mode == FULL and array.dtype == out.dtype and np.may_share_memory(array, out):
            start = start or out.__array_interface__["data"][0]
            if array.flags.c_contiguous and array.__array_interface__["data"][0] == start:
                found.append(k)
    return tuple(found)


class Loops:
    """A node's compiled loops (per which inputs, if any, are its output's memory) and how
    its inputs are read."""

    def __init__(self, program, shapes, out_shape, in_shapes):
        self.program, self.shapes = program, shapes
        self.modes, self.columns = _modes(in_shapes, out_shape)
        self.runs = _runs_as_loop(self.modes, program, shapes)
        self.functions = {}

    def __call__(self, out, inputs):
        """The (parallel, serial) functions for these buffers."""
        same = _in_place(out, inputs, self.modes)
        functions = self.functions.get(same)
        if functions is None:
            modes = tuple(IN_PLACE if k in same else m for k, m in enumerate(self.modes))
            functions = self.functions[same] = compiled_program(self.program, self.shapes,
                                                                modes)
        return functions


LAST = "numba last call"      # scratch key: the buffers of the node's last call and its call


def _rebound(last, out, inputs):
    """The last call's arguments with the inputs that changed put in, when each new one is
    like the one it replaces (shape, dtype, C order) and cannot be the output's memory (its
    dtype is not the output's), so the same function and reading modes hold; else None. A
    fed batch (the labels an accuracy compares with) is a new array at every step: 5 us a
    node through the full path, 1.5 this way."""
    args = None
    for k, (new, old) in enumerate(zip(inputs, last[1])):
        if new is old:
            continue
        if new.shape != old.shape or new.dtype != old.dtype or new.dtype == out.dtype or \
                not new.flags.c_contiguous:
            return None
        args = args or list(last[3])
        args[2 + k] = new.reshape(-1)
    return args


@backend.register("fused_elementwise", scratch=program_scratch)
def fused_elementwise(out, *inputs, program, shapes, scratch, workspace=None):
    # The executor calls a node with the same buffer objects step after step (the plan's,
    # a Variable's storage, a batch gathered into reused buffers): then the function and
    # its flat views are those of the last call, and checking identity is all the work.
    # Classifying the buffers every call cost 3-5 us a node, ~20 nodes a small train step.
    last = scratch.get(LAST)
    if last is not None and last[0] is out and len(inputs) == len(last[1]):
        if all(map(operator.is_, inputs, last[1])):
            last[2](*last[3])
            return
        args = _rebound(last, out, inputs)
        if args is not None:
            scratch[LAST] = (out, inputs, last[2], args)
            last[2](*args)
            return
    key = ("numba", out.shape) + tuple(a.shape for a in inputs)
    loops = scratch.get(key)                # per node and shapes: classified and compiled once
    if loops is None:
        loops = scratch[key] = Loops(program, shapes, out.shape, [a.shape for a in inputs])
    if loops.runs and out.flags.c_contiguous:
        parallel, serial = loops(out, inputs)
        function = parallel if out.size >= PARALLEL_MIN else serial
        if all(a.flags.c_contiguous for a in inputs):     # flat views, not copies: kept
            args = (out.reshape(-1), loops.columns) + tuple(a.reshape(-1) for a in inputs)
            scratch[LAST] = (out, inputs, function, args)
        else:
            args = (out.reshape(-1), loops.columns) + tuple(
                np.ascontiguousarray(a).reshape(-1) for a in inputs)
        function(*args)
        return
    numpy_fused(out, *inputs, program=program, shapes=shapes, scratch=scratch,
                workspace=workspace)
