"""Float types by name, bfloat16 included, and the one question numpy cannot answer for it.

numpy has no bfloat16; the ``ml_dtypes`` package (an optional extra: ``pip install
hiapi[bfloat16]``) adds it as a numpy dtype, but one of kind ``"V"``, so ``dtype.kind == "f"``
says no to it. Code that asks "is this a float type" asks ``is_float`` instead.
"""
import numpy as np

try:
    import ml_dtypes
    BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:         # the extra is not installed: every other dtype works
    ml_dtypes = None
    BFLOAT16 = None

LOW_PRECISION = ("float16", "bfloat16")


def as_dtype(dtype):
    """``np.dtype(dtype)``, also for the name ``"bfloat16"`` (which needs ``ml_dtypes``)."""
    if isinstance(dtype, str) and dtype == "bfloat16" or dtype is getattr(
            ml_dtypes, "bfloat16", False):
        if BFLOAT16 is None:
            raise ImportError("bfloat16 needs the ml_dtypes package: pip install "
                              "'hiapi[bfloat16]' (or pip install ml_dtypes)")
        return BFLOAT16
    return np.dtype(dtype)


def is_float(dtype):
    """True for numpy's float types and for bfloat16."""
    dtype = np.dtype(dtype)
    return dtype.kind == "f" or (BFLOAT16 is not None and dtype == BFLOAT16)


def is_low_precision(dtype):
    """True for the 16-bit float types, whose arithmetic hiapi's CPU kernels run in float32."""
    return is_float(dtype) and np.dtype(dtype).itemsize == 2


def finfo_max(dtype):
    """The largest finite value of a float type (bfloat16's from ml_dtypes)."""
    dtype = np.dtype(dtype)
    return float(ml_dtypes.finfo(dtype).max if dtype == BFLOAT16 else np.finfo(dtype).max)
