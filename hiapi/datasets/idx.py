"""Reading LeCun's IDX format, gzip-compressed, as MNIST and Fashion-MNIST publish it.

Layout (big-endian): a magic number ``0x0000TTDD`` (TT = 0x08 for uint8, DD = number of
dimensions), one int32 per dimension, then the values row-major. Only the two kinds these
datasets use are accepted: ``0x00000803`` (uint8 images, N x rows x cols) and ``0x00000801``
(uint8 labels, N).

Every check is strict on purpose: a truncated download or a file from another dataset must fail
here, loudly and naming the file, instead of becoming a silently short or garbled training set.
"""
import gzip
import struct
import zlib

import numpy as np

#: accepted magic numbers -> number of dimensions
MAGIC = {0x00000801: 1, 0x00000803: 3}
_CHUNK = 1 << 22


def read_idx(path, shape=None) -> np.ndarray:
    """The uint8 array stored in the gzip IDX file ``path``.

    ``shape``, when given, is the shape the caller expects; a file whose header says otherwise
    is rejected before its payload is read. The result is a fresh, writable array (as Keras's
    loaders return), not a view of a read-only buffer.

    Raises ``ValueError`` naming the file for a bad gzip stream (truncated, corrupt CRC), an
    unknown magic number, a header that does not fit, or a payload whose length differs from
    what the header promises; ``FileNotFoundError`` when ``path`` does not exist.
    """
    with open(path, "rb") as raw:          # outside the try: a missing file stays an OSError
        try:
            with gzip.GzipFile(fileobj=raw, mode="rb") as handle:
                return _read(handle, path, shape)
        except (gzip.BadGzipFile, EOFError, zlib.error) as error:
            raise ValueError(f"{path}: not a complete, valid gzip file ({error}); expected "
                             f"a gzip-compressed IDX file. A truncated download is the usual "
                             f"cause: delete the file and fetch it again") from error


def _read(handle, path, shape):
    magic_bytes = handle.read(4)
    if len(magic_bytes) < 4:
        raise ValueError(f"{path}: decompresses to {len(magic_bytes)} bytes, too short for "
                         f"an IDX header (expected at least 4 bytes of magic number)")
    (magic,) = struct.unpack(">I", magic_bytes)
    if magic not in MAGIC:
        raise ValueError(f"{path}: magic number 0x{magic:08x}, expected 0x00000801 (uint8 "
                         f"labels) or 0x00000803 (uint8 images); this is not an IDX file of "
                         f"MNIST's kind")
    ndim = MAGIC[magic]
    dims_bytes = handle.read(4 * ndim)
    if len(dims_bytes) < 4 * ndim:
        raise ValueError(f"{path}: the header ends after {4 + len(dims_bytes)} bytes, "
                         f"expected {4 + 4 * ndim} (magic plus {ndim} int32 dimensions)")
    found = tuple(struct.unpack(f">{ndim}I", dims_bytes))
    if shape is not None and found != tuple(shape):
        raise ValueError(f"{path}: the header says shape {found}, expected {tuple(shape)}")

    expected = int(np.prod(found, dtype=np.int64))
    payload = bytearray()
    # Read at most one byte past the promised size: enough to detect trailing data without
    # trusting a header to size an allocation. The read that returns b"" also makes gzip check
    # the stream's CRC and length trailer.
    while len(payload) <= expected:
        chunk = handle.read(min(_CHUNK, expected + 1 - len(payload)))
        if not chunk:
            break
        payload += chunk
    if len(payload) != expected:
        got = f"{len(payload)} bytes" if len(payload) < expected else "more bytes than that"
        raise ValueError(f"{path}: the header says shape {found}, i.e. {expected} bytes of "
                         f"uint8 data after the {4 + 4 * ndim}-byte header, but the file holds "
                         f"{got}")
    return np.frombuffer(payload, dtype=np.uint8).reshape(found)
