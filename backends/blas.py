"""``gemm(out, a, b, alpha, beta)``: ``out = alpha * a @ b + beta * out`` by the BLAS numpy loaded.

Why call BLAS directly: numpy's ``matmul`` always writes ``a @ b`` over its output, but BLAS's
``gemm`` can scale and add what the output already holds (its ``beta``) in the same pass. An
SGD step ``v = m * v - lr * x.T @ g`` then is one GEMM with ``alpha = -lr, beta = m`` straight
into ``v``, instead of a GEMM writing the gradient and a second pass reading it back with ``v``
(``hiapi/graph/passes/gemm_accumulate.py`` makes that rewrite).

numpy does not export its BLAS, so the library is found among the loaded shared libraries
(``threadpoolctl`` lists them with their paths) and ``cblas_sgemm``/``cblas_dgemm`` are looked
up under the names the common builds give them: numpy >= 2 wheels bundle scipy-openblas with a
``scipy_`` prefix and a ``64_`` suffix (64-bit integers), numpy 1.x wheels ``cblas_sgemm64_``,
system OpenBLAS, MKL and BLIS plain ``cblas_sgemm`` (32-bit integers). A binding is used only
after it computed a small product right (checked once against ``matmul``); when no binding
works, ``available()`` is False and callers use ``matmul`` plus an elementwise pass instead.
"""
import ctypes

import numpy as np

ROW_MAJOR, NO_TRANS, TRANS = 101, 111, 112
# (symbol prefix, suffix, integer type): 64-bit integers where the suffix says so
NAMES = (("scipy_", "64_", ctypes.c_int64), ("", "64_", ctypes.c_int64),
         ("scipy_", "", ctypes.c_int), ("", "", ctypes.c_int))
_functions = None          # {dtype: ctypes function}, found on first use


def blas_paths():
    try:
        from threadpoolctl import threadpool_info
    except ImportError:               # a dependency of hiapi, but a stripped install may lack it
        return []
    return [lib["filepath"] for lib in threadpool_info() if lib.get("user_api") == "blas"]


def bind(name, declare, works):
    """{dtype: binding} of ``cblas_?<name>`` for float32 and float64 in the first of numpy's
    BLAS libraries that has both under one of ``NAMES`` and where ``works(found)`` holds
    ({} where none does). ``declare(function, integer, scalar)`` sets the function's ctypes
    types for the library's integer and the dtype's scalar, and returns what to keep."""
    for path in blas_paths():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix, suffix, integer in NAMES:
            found = {}
            for dtype, letter, scalar in ((np.float32, "s", ctypes.c_float),
                                          (np.float64, "d", ctypes.c_double)):
                function = getattr(lib, f"{prefix}cblas_{letter}{name}{suffix}", None)
                if function is None:
                    break
                function.restype = None
                found[np.dtype(dtype)] = declare(function, integer, scalar)
            if len(found) == 2:
                if works(found):
                    return found
                break                       # this library's binding computes wrong
    return {}


def _declare_gemm(function, integer, scalar):
    function.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, integer, integer, integer,
                         scalar, ctypes.c_void_p, integer, ctypes.c_void_p, integer,
                         scalar, ctypes.c_void_p, integer]
    return function


def _functions_found():
    global _functions
    if _functions is None:
        _functions = bind("gemm", _declare_gemm, _works)
    return _functions


def _works(found):
    """The binding computes a small transposed product with alpha and beta right."""
    rng = np.random.default_rng(0)
    for dtype, fn in found.items():
        a, b = rng.random((5, 3)).astype(dtype), rng.random((5, 4)).astype(dtype)
        out = rng.random((3, 4)).astype(dtype)
        expected = 0.5 * out - 2.0 * (a.T @ b)
        _call(fn, out, a.T, b, -2.0, 0.5)
        if not np.allclose(out, expected, rtol=1e-5):
            return False
    return True


def available(dtype=np.float32):
    """True when ``gemm`` runs on this BLAS for ``dtype`` (float32 or float64)."""
    return np.dtype(dtype) in _functions_found()


def layout(x):
    """(transpose flag, leading dimension) of a 2-D array as BLAS reads it row-major, or None
    when neither its rows nor its columns are contiguous (or its strides run backwards)."""
    return layout_of(x.shape, x.strides, x.itemsize)


def layout_of(shape, strides, item):
    """``layout`` of an array of this shape, strides and item size (none need exist)."""
    (rows, cols), (down, across) = shape, strides
    if rows * cols == 0:
        return NO_TRANS, max(cols, 1)
    if across == item or cols == 1:
        if rows == 1:
            return NO_TRANS, max(cols, 1)
        if down % item == 0 and down // item >= max(cols, 1):
            return NO_TRANS, down // item
    if down == item or rows == 1:
        if cols == 1:
            return TRANS, max(rows, 1)
        if across % item == 0 and across // item >= max(rows, 1):
            return TRANS, across // item
    return None


def can_run(out, a, b):
    """True when ``gemm`` can take these arrays as they are (no copy): one float dtype, 2-D,
    ``out`` with contiguous rows (a band of columns of a C-contiguous array is fine), ``a``
    and ``b`` with contiguous rows or columns."""
    return (out.dtype == a.dtype == b.dtype and out.ndim == a.ndim == b.ndim == 2 and
            available(out.dtype) and layout(out) is not None and
            layout(out)[0] == NO_TRANS and layout(a) is not None and layout(b) is not None)


def gemm(out, a, b, alpha, beta):
    """``out = alpha * a @ b + beta * out`` in place (``can_run`` must hold). ``out`` must not
    overlap ``a`` or ``b``."""
    _call(_functions_found()[out.dtype], out, a, b, alpha, beta)


def _call(fn, out, a, b, alpha, beta):
    m, k = a.shape
    n = b.shape[1]
    if m == 0 or n == 0:
        return
    if k == 0:                          # no product: BLAS builds differ on k = 0
        np.multiply(out, beta, out=out)
        return
    (trans_a, lda), (trans_b, ldb), (_, ldc) = layout(a), layout(b), layout(out)
    fn(ROW_MAJOR, trans_a, trans_b, m, n, k, float(alpha), a.ctypes.data, lda, b.ctypes.data,
       ldb, float(beta), out.ctypes.data, ldc)
