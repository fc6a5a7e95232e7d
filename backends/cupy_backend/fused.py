"""Elementwise programs compiled to one ``cupy.ElementwiseKernel`` each.

A fused program (see ``hiapi.graph.passes.fusion``) becomes the body of one kernel: each step is
a scalar C++ expression whose value is rounded to the step's dtype, as the numpy backend rounds
each step into a buffer of that dtype, so fused and unfused results differ only by the device's
math functions (a few ulp). cupy broadcasts the inputs to the output, so, unlike the numba loop,
every broadcasting pattern compiles and none falls back. One kernel object is built per distinct
(program, input dtypes) and kept in ``_kernels``; cupy compiles it on first launch for each
argument layout and keeps the binary in its on-disk cache (``CUPY_CACHE_DIR``).

Single ops whose numpy kernel is a composition (sigmoid, where) run through the same compiler as
one-step programs, so they give the same values whether fused or not.
"""
import hashlib
import math

import cupy
import numpy as np

from hiapi.backends.cupy_backend.registry import backend
from hiapi.backends.workspace import aligned, take

# the C++ type kernel code uses for each dtype (cupy's names; float16 is cupy's half class)
CTYPES = {"bool": "bool", "int8": "signed char", "uint8": "unsigned char", "int16": "short",
          "uint16": "unsigned short", "int32": "int", "uint32": "unsigned int",
          "int64": "long long", "uint64": "unsigned long long", "float16": "float16",
          "float32": "float", "float64": "double"}


def compute_type(dtype):
    """The C++ type arithmetic on ``dtype`` runs in: float16 in float, as numpy computes it."""
    dtype = np.dtype(dtype)
    return "float" if dtype == np.float16 else CTYPES[dtype.name]


def _power(c, a, b):
    if c in ("float", "double"):
        return f"pow({a}, {b})"
    return f"({c})pow((double){a}, (double){b})"       # integer powers, exact below 2**53


def _abs(c, a):
    return f"fabs({a})" if c in ("float", "double") else f"({a} < ({c})0 ? -{a} : {a})"


# op -> C++ expression over the step's compute type c and its (already cast) arguments.
# maximum/minimum/relu keep numpy's rule: a NaN in the first argument wins.
ARITHMETIC = {
    "negative": lambda c, a: f"-{a}",
    "exp": lambda c, a: f"exp({a})",
    "log": lambda c, a: f"log({a})",
    "sqrt": lambda c, a: f"sqrt({a})",
    "tanh": lambda c, a: f"tanh({a})",
    "abs": _abs,
    "relu": lambda c, a: f"(({a} >= ({c})0 || {a} != {a}) ? {a} : ({c})0)",
    "sigmoid": lambda c, a: (f"({a} >= ({c})0 ? ({c})1 / (({c})1 + exp(-{a})) "
                             f": exp({a}) / (({c})1 + exp({a})))"),
    "add": lambda c, a, b: f"{a} + {b}",
    "subtract": lambda c, a, b: f"{a} - {b}",
    "multiply": lambda c, a, b: f"{a} * {b}",
    "divide": lambda c, a, b: f"{a} / {b}",
    "power": _power,
    "maximum": lambda c, a, b: f"(({a} >= {b} || {a} != {a}) ? {a} : {b})",
    "minimum": lambda c, a, b: f"(({a} <= {b} || {a} != {a}) ? {a} : {b})",
}
COMPARISONS = {"greater": ">", "greater_equal": ">=", "less": "<", "less_equal": "<=",
               "equal": "==", "not_equal": "!="}
EXPRESSIONS = set(ARITHMETIC) | set(COMPARISONS) | {"where", "cast"}

_kernels = {}


def _value(name, dtype, target=None):
    """A step argument as C++: float16 read as float; cast to ``target`` when that differs."""
    own = compute_type(dtype)
    text = name if own == CTYPES[np.dtype(dtype).name] else f"(({own}){name})"
    return text if target is None or target == own else f"(({target}){text})"


def _expression(name, args, dtype):
    """C++ for one step; ``args`` are (variable name, dtype) pairs, ``dtype`` the result's."""
    if name in COMPARISONS:
        common = compute_type(np.result_type(*[d for _, d in args]))
        a, b = (_value(v, d, common) for v, d in args)
        return f"{a} {COMPARISONS[name]} {b}"
    if name == "cast":
        return _value(*args[0])
    c = compute_type(dtype)
    if name == "where":
        (cond, cond_dtype), rest = args[0], args[1:]
        a, b = (_value(v, d, c) for v, d in rest)
        return f"({_value(cond, cond_dtype)} ? {a} : {b})"
    return ARITHMETIC[name](c, *(_value(v, d, c) for v, d in args))


def kernel_source(steps, input_dtypes, step_dtypes):
    """(in_params, out_params, operation) of the ElementwiseKernel for a program whose steps
    are ``(op name, refs)`` (refs as in ``FusedElementwise``)."""
    names = []
    for dtype in (*input_dtypes, *step_dtypes):
        if np.dtype(dtype).name not in CTYPES:
            # bfloat16 (ml_dtypes): cupy has no such array type, so no kernel can take it
            raise TypeError(f"backend 'cupy' has no kernels for dtype {np.dtype(dtype).name}; "
                            f"the dtype policy 'mixed_bfloat16' runs on the CPU backends, on "
                            f"the GPU use 'mixed_float16'")
    for j, (name, refs) in enumerate(steps):
        args = [(f"x{k}", input_dtypes[k]) if kind == "input" else (f"s{k}", step_dtypes[k])
                for kind, k in refs]
        ctype = CTYPES[np.dtype(step_dtypes[j]).name]
        names.append(f"const {ctype} s{j} = ({ctype})({_expression(name, args, step_dtypes[j])});")
    names.append(f"out = s{len(steps) - 1};")
    in_params = ", ".join(f"{np.dtype(d).name} x{k}" for k, d in enumerate(input_dtypes))
    return in_params, f"{np.dtype(step_dtypes[-1]).name} out", "\n".join(names)


def program_kernel(steps, input_dtypes, step_dtypes):
    """The (cached) ElementwiseKernel computing a program: call it as ``kernel(*inputs, out)``."""
    key = (steps, tuple(np.dtype(d).str for d in input_dtypes),
           tuple(np.dtype(d).str for d in step_dtypes))
    kernel = _kernels.get(key)
    if kernel is None:
        in_params, out_params, operation = kernel_source(steps, input_dtypes, step_dtypes)
        name = "hiapi_fused_" + hashlib.sha1(repr(key).encode()).hexdigest()[:16]
        # cupy declares its float16 class only for kernels with a float16 parameter; a float16
        # step between float32 or float64 ones (a cast's round trip, batch normalization's
        # statistics under mixed_float16) failed to compile without it ("incomplete type")
        preamble = "#include <cupy/float16.cuh>" if any(
            np.dtype(d) == np.float16 for d in (*input_dtypes, *step_dtypes)) else ""
        kernel = _kernels[key] = cupy.ElementwiseKernel(in_params, out_params, operation, name,
                                                        preamble=preamble)
    return kernel


def run_steps(out, inputs, steps, step_dtypes):
    program_kernel(steps, tuple(a.dtype for a in inputs), step_dtypes)(*inputs, out)


def _step_slots(program, input_shapes, step_dtypes):
    """Each inner step's (shape, byte offset in the workspace) for the stepwise evaluation,
    and the workspace bytes (the last step writes the output)."""
    shapes, slots, total = [], [], 0
    for index, (_, refs) in enumerate(program):
        shapes.append(np.broadcast_shapes(*[input_shapes[k] if kind == "input" else shapes[k]
                                            for kind, k in refs]))
        slots.append((shapes[-1], total))
        if index < len(program) - 1:
            total += aligned(math.prod(shapes[-1]) * np.dtype(step_dtypes[index]).itemsize)
    return slots, total


def program_scratch(shapes, dtypes, attrs):
    """None for a program compiled to one kernel; each inner step's value for one with an op
    the compiler has no expression for (run step by step)."""
    program = attrs["program"]
    if all(op.name in EXPRESSIONS for op, _ in program):
        return 0
    return _step_slots(program, shapes[1:], [d for _, d in attrs["shapes"]])[1]


@backend.register("fused_elementwise", scratch=program_scratch)
def fused_elementwise(out, *inputs, program, shapes, scratch, workspace=None):
    # the op's scratch dict (kept between calls) holds its kernel, skipping the key's hashing
    key = ("cupy",) + tuple(a.dtype.str for a in inputs)
    kernel = scratch.get(key)
    if kernel is None:
        steps = tuple((op.name, refs) for op, refs in program)
        if not all(name in EXPRESSIONS for name, _ in steps):
            return _stepwise(out, inputs, program, shapes, workspace)
        kernel = scratch[key] = program_kernel(steps, [a.dtype for a in inputs],
                                               [dtype for _, dtype in shapes])
    kernel(*inputs, out)


def _stepwise(out, inputs, program, shapes, workspace):
    """A program with an op this compiler has no expression for: each step's own kernel, its
    value in the planned workspace."""
    values = []
    dtypes = [dtype for _, dtype in shapes]
    slots, _ = _step_slots(program, [a.shape for a in inputs], dtypes)
    for index, (op, refs) in enumerate(program):
        args = [inputs[k] if kind == "input" else values[k] for kind, k in refs]
        shape, offset = slots[index]
        target = out if index == len(program) - 1 else \
            take(workspace, shape, dtypes[index], offset, xp=cupy)
        backend.kernels[op.name](target, *args, **op.attrs())
        values.append(target)
