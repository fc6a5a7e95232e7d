"""Matrix products as direct cuBLAS calls on cupy's own handle, recordable in a CUDA graph.

cupy refuses every cuBLAS call while its stream is being recorded ("calling cuBLAS API during
stream capture is currently unsupported": its ``setStream`` raises, pending tests of which
cuBLAS calls are safe). cuBLAS itself records GEMMs since CUDA 11.5 (and allocates its
workspace stream-ordered since 12.2), so the products of a step go to cuBLAS here, through
ctypes, on the handle cupy created for this thread: ``cublasGemmEx`` for one product and
``cublasGemmStridedBatchedEx`` for a batch, with the compute type cupy would use (float32 sums
for float32 and float16, TF32 only when ``CUPY_TF32=1``, float64 for float64). A product this
module does not take (mixed dtypes, broadcast batches, an operand that is neither row- nor
column-major) goes to ``cupy.matmul``, which is correct unrecorded and makes a recording fail
cleanly, so that step runs unrecorded.

The column-major arguments of a row-major product are ``hiapi.backends.gemm_layout``'s.
"""
import ctypes
import os

import cupy
import numpy as np

from hiapi.backends.gemm_layout import gemm_arguments

_R_32F, _R_64F, _R_16F = 0, 1, 2                                    # cudaDataType
_COMPUTE_32F, _COMPUTE_64F, _COMPUTE_32F_FAST_TF32 = 68, 70, 77     # cublasComputeType_t
_DEFAULT_ALGO = -1
_TYPES = {np.dtype(np.float32): _R_32F, np.dtype(np.float64): _R_64F,
          np.dtype(np.float16): _R_16F}


def _cublas_library():
    """The libcublas cupy loaded (found in this process's mappings, so it is the same one)."""
    cupy.cuda.device.get_cublas_handle()            # loads it, if cupy has not yet
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.rsplit(None, 1)[-1]
            if os.path.basename(path).startswith("libcublas.so"):
                return ctypes.CDLL(path)
    raise OSError("libcublas is not loaded in this process")


class _Cublas:
    def __init__(self):
        lib = _cublas_library()
        p, i, ll = ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong
        self.set_stream = lib.cublasSetStream_v2
        self.set_stream.argtypes, self.set_stream.restype = [p, p], i
        self.gemm = lib.cublasGemmEx
        self.gemm.argtypes = [p, i, i, i, i, i, p, p, i, i, p, i, i, p, p, i, i, i, i]
        self.gemm.restype = i
        self.batched = lib.cublasGemmStridedBatchedEx
        self.batched.argtypes = [p, i, i, i, i, i, p, p, i, i, ll, p, i, i, ll, p, p, i, i, ll,
                                 i, i, i]
        self.batched.restype = i


_lib = None


def _library():
    global _lib
    if _lib is None:
        _lib = _Cublas()
    return _lib


_TF32 = os.environ.get("CUPY_TF32", "0") != "0"      # read once, at import, as cupy does


def _compute(dtype):
    """(compute type, scalar type) as cupy's matmul chooses them."""
    if dtype == np.float64:
        return _COMPUTE_64F, ctypes.c_double
    tf32 = _TF32 and dtype == np.float32
    return (_COMPUTE_32F_FAST_TF32 if tf32 else _COMPUTE_32F), ctypes.c_float


def matmul(a, b, out):
    """``out[...] = a @ b`` for 2-D or equally batched 3-D operands of one dtype."""
    call = gemm_arguments(a, b, out) if out.dtype in _TYPES else None
    if call is None:
        cupy.matmul(a, b, out=out)
        return
    compute, scalar = _compute(out.dtype)
    alpha, beta = scalar(1), scalar(0)
    lib, handle = _library(), cupy.cuda.device.get_cublas_handle()
    lib.set_stream(handle, cupy.cuda.get_current_stream().ptr)
    kind = _TYPES[out.dtype]
    if call.batch == 1:
        status = lib.gemm(handle, call.transa, call.transb, call.m, call.n, call.k,
                          ctypes.byref(alpha), b.data.ptr, kind, call.lda, a.data.ptr, kind,
                          call.ldb, ctypes.byref(beta), out.data.ptr, kind, call.ldc, compute,
                          _DEFAULT_ALGO)
    else:
        status = lib.batched(handle, call.transa, call.transb, call.m, call.n, call.k,
                             ctypes.byref(alpha), b.data.ptr, kind, call.lda, call.stride_a,
                             a.data.ptr, kind, call.ldb, call.stride_b, ctypes.byref(beta),
                             out.data.ptr, kind, call.ldc, call.stride_c, call.batch, compute,
                             _DEFAULT_ALGO)
    if status != 0:
        raise RuntimeError(f"cuBLAS GEMM failed with status {status} (a {a.shape} {a.dtype}, "
                           f"b {b.shape}, out {out.shape})")


def product(a, b):
    """``a @ b`` as a new array (through ``matmul`` where it takes the operands)."""
    if a.ndim == b.ndim and a.ndim in (2, 3) and a.shape[:-2] == b.shape[:-2] and \
            a.dtype == b.dtype:
        out = cupy.empty(a.shape[:-1] + b.shape[-1:], a.dtype)
        matmul(a, b, out)
        return out
    return cupy.matmul(a, b)
