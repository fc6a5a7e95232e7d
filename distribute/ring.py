"""Ring allreduce: reduce-scatter then allgather around a ring of P ranks.

Each rank sends and receives 2(P-1) chunks of N/P elements, so every rank moves
2(P-1)/P * N elements whatever P is: bandwidth-optimal (Patarasuk & Yuan 2009; the seed notes).
Works for any length (chunks differ by at most one element) and any dtype; ``chunk_bytes``
splits each step's message further so large arrays pipeline through the ring.

What made the first version slow at small sizes was Python, not the wire: a ``linspace`` and a
list of slices per call, a fresh receive buffer per call, and two request objects plus a
``Waitall`` per step. Now the segment bounds are cached per (length, ranks), the receive
buffer is kept between calls, and a step that fits in one chunk is a single ``Sendrecv``.
"""
from functools import lru_cache

import numpy as np


@lru_cache(maxsize=256)
def segment_bounds(length, parts):
    """``parts + 1`` boundaries splitting ``length`` elements into near-equal segments."""
    return tuple(int(b) for b in np.linspace(0, length, parts + 1).astype(int))


_incoming: dict = {}          # (comm handle, dtype) -> receive buffer, reused between calls


def _receive_buffer(comm, dtype, length):
    key = (comm.py2f(), dtype)
    buffer = _incoming.get(key)
    if buffer is None or len(buffer) < length:
        buffer = _incoming[key] = np.empty(length, dtype)
    return buffer


def _sendrecv(comm, send, dest, recv, source, chunk_elements):
    """Send ``send`` right while receiving ``recv`` from the left, in chunks; each side posts
    as many messages as its own segment needs, so segments of different lengths pair up."""
    if len(send) <= chunk_elements and len(recv) <= chunk_elements:
        comm.Sendrecv(send, dest, 0, recv, source, 0)
        return
    from mpi4py import MPI
    requests = [comm.Irecv(recv[i:i + chunk_elements], source=source, tag=i)
                for i in range(0, len(recv), chunk_elements)]
    requests += [comm.Isend(send[i:i + chunk_elements], dest=dest, tag=i)
                 for i in range(0, len(send), chunk_elements)]
    MPI.Request.Waitall(requests)


def ring_allreduce(comm, array, chunk_bytes=1 << 20):
    """Sum ``array`` (any shape, contiguous) over the ranks of ``comm``, in place."""
    rank, size = comm.Get_rank(), comm.Get_size()
    if size == 1:
        return array
    if not array.flags.c_contiguous:
        raise ValueError(f"ring allreduce: the array must be C-contiguous (it is summed in "
                         f"place), got strides {array.strides} for shape {array.shape}")
    flat = array.reshape(-1)
    bounds = segment_bounds(len(flat), size)
    right, left = (rank + 1) % size, (rank - 1) % size
    chunk_elements = max(1, chunk_bytes // max(flat.itemsize, 1))
    incoming = _receive_buffer(comm, flat.dtype, len(flat) // size + 1)
    for step in range(size - 1):                          # reduce-scatter
        s, r = (rank - step) % size, (rank - step - 1) % size
        mine = flat[bounds[r]:bounds[r + 1]]
        buffer = incoming[:len(mine)]
        _sendrecv(comm, flat[bounds[s]:bounds[s + 1]], right, buffer, left, chunk_elements)
        with np.errstate(over="ignore", invalid="ignore"):    # silent, as MPI's sum
            np.add(mine, buffer, out=mine)
    for step in range(size - 1):                          # allgather: straight into place
        s, r = (rank + 1 - step) % size, (rank - step) % size
        _sendrecv(comm, flat[bounds[s]:bounds[s + 1]], right, flat[bounds[r]:bounds[r + 1]],
                  left, chunk_elements)
    return array
