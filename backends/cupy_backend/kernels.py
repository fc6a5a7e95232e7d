"""cupy kernels for elementwise maths, reductions, shapes and matmul: ``kernel(out, *inputs,
**attrs)`` writes into ``out``; view kernels return the view.

These mirror the numpy reference kernel for kernel: cupy has the same functions with the same
``out=`` arguments, and runs them on the current stream without waiting for the GPU. The shape
ops, identity, pad and the broadcast pair are the numpy backend's own (``array_kernels``).
"""
import math

import cupy
import numpy as np

from hiapi.backends import array_kernels
from hiapi.backends.workspace import take
from hiapi.backends.cupy_backend import cublas_products
from hiapi.backends.cupy_backend.registry import backend
from hiapi.backends.cupy_backend.fused import run_steps

register = backend.register
array_kernels.register(backend)        # shape ops, identity, pad: shared with numpy

UFUNCS = ("negative", "exp", "log", "sqrt", "tanh", "abs", "add", "subtract", "multiply",
          "divide", "power", "maximum", "minimum", "greater", "greater_equal", "less",
          "less_equal", "equal", "not_equal")


def _ufunc_kernel(ufunc):
    def kernel(out, *inputs):
        ufunc(*inputs, out=out)
    return kernel


for _name in UFUNCS:
    register(_name)(_ufunc_kernel(getattr(cupy, _name)))


def _one_step(name, n_inputs):
    """A kernel running op ``name`` as a one-step program (see ``fused``): one pass on the
    GPU where the numpy kernel composes several calls, and the same values as when fused."""
    steps = ((name, tuple(("input", k) for k in range(n_inputs))),)

    def kernel(out, *inputs):
        run_steps(out, inputs, steps, (out.dtype,))
    return kernel


register("sigmoid")(_one_step("sigmoid", 1))   # the overflow-free form, as in numpy's kernel
register("where")(_one_step("where", 3))


@register("relu")
def relu(out, x):
    cupy.maximum(x, 0, out=out)


@register("cast")
def cast(out, x, dtype):
    cupy.copyto(out, x, casting="unsafe")


_ones = {}


def _ones_row(rows, dtype):
    """A (1, rows) row of ones on the device, kept: the left factor of a column sum."""
    key = (rows, dtype)
    if key not in _ones:
        _ones[key] = cupy.ones((1, rows), dtype)
    return _ones[key]


@register("sum")
def sum_(out, x, axis, keepdims):
    lead = len(axis)
    if 0 < lead < x.ndim and x.size and tuple(axis) == tuple(range(lead)) and \
            x.dtype == out.dtype and \
            x.dtype in (cupy.float32, cupy.float64) and x.flags.c_contiguous and \
            out.flags.c_contiguous:
        # a sum over the leading axes (every bias gradient) as one cuBLAS product with a row
        # of ones: cupy's reduction over a tall matrix's rows took 0.3 ms where this takes ~10 us
        rows = math.prod(x.shape[:lead])
        cublas_products.matmul(_ones_row(rows, x.dtype), x.reshape(rows, -1), out.reshape(1, -1))
        return
    cupy.sum(x, axis=axis, dtype=out.dtype, keepdims=keepdims, out=out)


@register("max")
def max_(out, x, axis, keepdims):
    cupy.amax(x, axis=axis, keepdims=keepdims, out=out)


@register("argmax")
def argmax(out, x, axis):
    cupy.argmax(x, axis=axis, out=out)


@register("size")
def size(out, x, axis, dtype):
    out.fill(int(np.prod([x.shape[a] for a in axis])))    # from shapes: no device read


@register("matmul")
def matmul(out, a, b):
    # cuBLAS in float32 unless CUPY_TF32=1 is set (then Tensor Cores, at ~1e-3 relative error)
    cublas_products.matmul(a, b, out)


_AXPBY = cupy.ElementwiseKernel("T p, T c, T alpha, T beta", "T out",
                                "out = alpha * p + beta * c", "hiapi_axpby")


def gemm_scratch(shapes, dtypes, attrs):
    """The product's bytes, planned in the arena: out's (its shape and dtype, the usual case)."""
    return math.prod(shapes[0]) * dtypes[0].itemsize


@register("gemm", scratch=gemm_scratch)
def gemm(out, a, b, c, alpha, beta, workspace=None):
    # the product into the planned scratch, then alpha * product + beta * c in one pass; out
    # may be c's storage (each element of c is read before its own element of out is written).
    # Planned, not pooled: a recorded step (step_graphs) would otherwise keep every product in
    # its own pool, outside memory_report (7 MiB for the MLP at batch 256)
    if workspace is not None and a.ndim == b.ndim == 2 and a.dtype == b.dtype == out.dtype \
            and (a.shape[0], b.shape[1]) == out.shape:
        product = take(workspace, out.shape, out.dtype, xp=cupy)
        cublas_products.matmul(a, b, product)
    else:
        product = cublas_products.product(a, b)
    _AXPBY(product, c, _operand(alpha, out.dtype), _operand(beta, out.dtype), out)


def _operand(value, dtype):
    """A scalar operand in ``dtype``: a step input (a 0-d device array, the learning rate)
    stays on the device; a host number becomes a typed scalar."""
    if isinstance(value, cupy.ndarray):
        return value.astype(dtype, copy=False)
    return dtype.type(value)


@register("concatenate")
def concatenate(out, *xs, axis):
    cupy.concatenate(xs, axis=axis, out=out)
