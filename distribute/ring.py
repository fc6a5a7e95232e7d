"""Ring allreduce: reduce-scatter then allgather around a ring of P ranks.

Each rank sends and receives 2(P-1) chunks of N/P elements, so every rank moves
2(P-1)/P * N elements whatever P is: bandwidth-optimal (Patarasuk & Yuan 2009; the seed notes).
Works for any length (chunks differ by at most one element) and any dtype; ``chunk_bytes``
splits each step's message further so large arrays pipeline through the ring.
"""
import numpy as np


def _segments(length, parts):
    bounds = np.linspace(0, length, parts + 1).astype(int)
    return [slice(bounds[i], bounds[i + 1]) for i in range(parts)]


def _sendrecv(comm, send, dest, recv, source, chunk_elements):
    """Send ``send`` right while receiving ``recv`` from the left, in chunks; each side posts
    as many messages as its own segment needs, so segments of different lengths pair up."""
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
    flat = array.reshape(-1)
    segments = _segments(len(flat), size)
    right, left = (rank + 1) % size, (rank - 1) % size
    chunk_elements = max(1, chunk_bytes // max(flat.itemsize, 1))
    incoming = np.empty(len(flat) // size + 1, flat.dtype)
    for step in range(size - 1):                          # reduce-scatter
        send = segments[(rank - step) % size]
        recv = segments[(rank - step - 1) % size]
        buffer = incoming[:recv.stop - recv.start]
        _sendrecv(comm, flat[send], right, buffer, left, chunk_elements)
        flat[recv] += buffer
    for step in range(size - 1):                          # allgather
        send = segments[(rank + 1 - step) % size]
        recv = segments[(rank - step) % size]
        buffer = incoming[:recv.stop - recv.start]
        _sendrecv(comm, flat[send], right, buffer, left, chunk_elements)
        flat[recv] = buffer
    return array
