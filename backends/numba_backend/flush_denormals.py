"""Subnormal floats flushed to zero inside the numba backend's elementwise loops.

Why: an optimizer's slot of a weight whose gradient is exactly zero decays geometrically
(Adam's ``m = 0.9 m``, SGD's velocity) into the subnormal range below 1.2e-38, and there it
sticks: 0.9 times the smallest subnormal rounds back to it. Every multiply and add on a
subnormal takes a microcode assist of ~150 cycles on x86, so such slots slow every step from
then on. On MNIST they appear within the first epoch (the border pixels are always zero: their
input weights get zero gradients): the 784-128-10 MLP with Adam at batch 32 formed ~4,000
subnormal moments and its steps took 1.27-1.30 ms, against 1.07 ms with subnormals flushed
(the same run, 32,000-sample epochs; SGD with momentum 857 against 750-800 us). TensorFlow
runs its CPU kernels with subnormals flushed for the same reason.

How: the x86 SSE control register (MXCSR) has two bits, flush-to-zero (results) and
denormals-are-zero (inputs). Each compiled loop sets both when it starts and puts the register
back when it ends, so only hiapi's loops change, never the user's numpy code nor numpy's own
warnings about a zero smallest subnormal. A value that would become subnormal becomes 0 (a
difference below 1.2e-38 in float32, 2.2e-308 in float64) and a subnormal input reads as 0.
Other machines (ARM, ...) have other registers: there the loops run unchanged.
"""
import platform

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

FLUSH_BITS = 0x8040          # MXCSR bit 15: flush to zero; bit 6: denormals are zero
SUPPORTED = platform.machine().lower() in ("x86_64", "amd64")


def _register_call(builder, name, slot):
    pointer = ir.IntType(8).as_pointer()
    function = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(ir.VoidType(), [pointer]), name)
    builder.call(function, [builder.bitcast(slot, pointer)])


@intrinsic
def flush_denormals_begin(typingctx):
    """Set both flush bits in this thread's MXCSR; returns the register as it was."""
    def codegen(context, builder, signature, args):
        slot = cgutils.alloca_once(builder, ir.IntType(32))
        _register_call(builder, "llvm.x86.sse.stmxcsr", slot)
        old = builder.load(slot)
        builder.store(builder.or_(old, ir.Constant(ir.IntType(32), FLUSH_BITS)), slot)
        _register_call(builder, "llvm.x86.sse.ldmxcsr", slot)
        return old
    return types.uint32(), codegen


@intrinsic
def flush_denormals_end(typingctx, old):
    """Put back the MXCSR that ``flush_denormals_begin`` returned."""
    def codegen(context, builder, signature, args):
        slot = cgutils.alloca_once(builder, ir.IntType(32))
        builder.store(args[0], slot)
        _register_call(builder, "llvm.x86.sse.ldmxcsr", slot)
        return context.get_dummy_value()
    return types.void(types.uint32), codegen
