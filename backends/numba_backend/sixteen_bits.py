"""16-bit floats on the numba backend: numba compiles no float16 or bfloat16 arithmetic (its
type system has neither; a fused loop over float16 fails to compile), so every numba kernel
hands values of those types to the numpy kernel of the same op, with that kernel's scratch.

Mixed precision keeps most of a step in 16 bits, so under it the numba backend runs mostly
numpy's kernels; the GEMMs and reductions run in float32 anyway (``Backend.float32_ops``).
"""
import functools

from hiapi.runtime.dtypes import is_low_precision


def _sixteen_bits(arrays):
    return any(is_low_precision(a.dtype) for a in arrays if hasattr(a, "dtype"))


def fall_back(backend, numpy_backend):
    """Wrap each of ``backend``'s own kernels (those that are not numpy's) and their scratch
    declarations so 16-bit values go to ``numpy_backend``'s."""
    for name, kernel in list(backend.kernels.items()):
        numpy_kernel = numpy_backend.kernels.get(name)
        if numpy_kernel is None or kernel is numpy_kernel:
            continue
        backend.kernels[name] = _dispatch(kernel, numpy_kernel)
        own, numpy_scratch = backend.scratch.get(name), numpy_backend.scratch.get(name)
        if own is not None or numpy_scratch is not None:
            backend.scratch[name] = _scratch(own, numpy_scratch)


def _dispatch(kernel, numpy_kernel):
    """The kernel that looks at its arrays' dtypes at every call, for callers that know none;
    the executor asks ``for_specs`` once per compile instead (``Backend.kernel``): the check
    cost ~3 us a kernel, 40-50 us of the 784-128-10 MLP's 1 ms train step."""
    @functools.wraps(kernel)
    def run(*arrays, **attrs):
        return (numpy_kernel if _sixteen_bits(arrays) else kernel)(*arrays, **attrs)
    run.for_specs = lambda specs: numpy_kernel if any(
        is_low_precision(spec.dtype) for spec in specs) else kernel
    return run


def _scratch(own, numpy_scratch):
    def declare(shapes, dtypes, attrs):
        chosen = numpy_scratch if any(is_low_precision(d) for d in dtypes) else own
        return 0 if chosen is None else chosen(shapes, dtypes, attrs)
    return declare
