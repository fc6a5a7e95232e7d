"""Reading the IDX format (LeCun's, used by MNIST and Fashion-MNIST), gzip-compressed.

Big-endian: magic 0x00000803 (uint8, 3 dims) or 0x00000801 (uint8, 1 dim), then one int32 per
dimension, then the values row-major. A file whose size does not match its header is rejected,
so a truncated download never becomes a silently short dataset.
"""
import gzip
import struct
import zlib

import numpy as np

_MAGIC = {0x00000801: 1, 0x00000803: 3}


def read_idx(path):
    """The array stored in a gzip IDX file, as uint8."""
    try:
        with gzip.open(path, "rb") as handle:
            blob = handle.read()
    except (OSError, EOFError, zlib.error) as error:
        raise ValueError(f"{path}: not a complete gzip file ({error})") from None
    if len(blob) < 4:
        raise ValueError(f"{path}: {len(blob)} bytes, too short for an IDX header")
    (magic,) = struct.unpack(">I", blob[:4])
    if magic not in _MAGIC:
        raise ValueError(f"{path}: magic number 0x{magic:08x}, expected an IDX uint8 file "
                         f"(0x00000801 labels or 0x00000803 images)")
    ndim = _MAGIC[magic]
    header = 4 + 4 * ndim
    shape = struct.unpack(f">{ndim}I", blob[4:header])
    expected = header + int(np.prod(shape))
    if len(blob) != expected:
        raise ValueError(f"{path}: header says shape {shape} ({expected} bytes), the file "
                         f"holds {len(blob)} bytes")
    return np.frombuffer(blob, np.uint8, offset=header).reshape(shape)
