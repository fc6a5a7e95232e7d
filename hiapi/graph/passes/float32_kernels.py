"""Float32 kernels for 16-bit values: ``conv2d(x16, w16)`` becomes
``cast(conv2d(cast(x16, f32), cast(w16, f32)), f16)`` for the ops the backend names.

Why: numpy has no float16 or bfloat16 GEMM. Its float16 matmul runs an element loop about 60x
slower than the float32 BLAS call (256x512 @ 512x256: 74 ms against 1.2 ms including both
casts, measured on this project's machine), and a float16 sum rounds every partial sum to 11
bits. Mixed precision keeps the activations in 16 bits (the memory it saves) and runs the
products and reductions in float32, as GPUs do with float32 accumulators. The backend lists
its ops (``Backend.float32_ops``): the CPU backends name their GEMM and reduction kernels; a
GPU backend with 16-bit GEMMs names none and the pass changes nothing.

Runs after ``cse`` (so the float32 copy of a forward activation made for the forward product
is not merged with the one its filter gradient makes in the backward pass, which would keep a
float32 activation alive from one to the other) and before ``fusion`` (which may fuse the casts
with their elementwise neighbours).
"""
import numpy as np

from hiapi.runtime.dtypes import is_low_precision
from hiapi.graph.ops.elementwise import cast
from hiapi.graph.passes.rewrite import rewrite, with_inputs


def run(roots, float32_ops=frozenset()):
    if not float32_ops:
        return roots

    def transform(var, inputs):
        if var.op.name not in float32_ops or var.recompute or not (
                is_low_precision(var.dtype) or any(is_low_precision(i.dtype) for i in inputs)):
            return with_inputs(var, inputs)
        wide = [cast(i, np.float32) if is_low_precision(i.dtype) else i for i in inputs]
        computed = var.op(*wide, name=var.name)
        return cast(computed, var.dtype)
    return rewrite(roots, transform)
