"""Sparse allreduce: the sum over ranks of sparse vectors, by recursive doubling on
(index, value) pairs, switching to dense once the union fills up (SparCML, Renggli et al.
2019, https://arxiv.org/abs/1802.08021).

Why not allgather: gathering every rank's k pairs costs each rank (P-1)*k pairs received and
a sum over P payloads, growing linearly with the ranks. Recursive doubling takes log2(P)
rounds; in round r a rank swaps its partial sum with rank XOR 2^r and merges. The partial sum
of 2^r ranks holds at most 2^r*k pairs, so while the union stays sparse a rank receives
k + 2k + ... = (P-1)*k pairs at worst (equal to allgather when no coordinates overlap, much
less when they do, as top-k and DGC coordinates of the same model tend to), and once
the union is dense each message is capped at the dense vector. Each message goes sparse
(int32 indices, then values; tag ``SPARSE``) or dense (tag ``DENSE``), whichever is smaller,
and a dense partial sum stays dense: the switch needs no agreement between ranks.

Every rank ends with bit-identical sums (the pair merges ``a + b`` and ``b + a`` are the same
float additions), so replicas stay in lockstep. With P not a power of two, the ranks beyond the
largest power of two fold their vector into rank - 2^m first and receive the result at the end.
"""
import time

import numpy as np

SPARSE, DENSE = 11, 12              # message tags: how the receiver reads the bytes


class SparseVector:
    """A length-``n`` vector: sorted unique int32 ``indices`` and their ``values``, or a dense
    array in ``dense`` (then ``indices`` and ``values`` are None)."""

    def __init__(self, n, indices=None, values=None, dense=None):
        self.n, self.indices, self.values, self.dense = n, indices, values, dense

    @classmethod
    def from_pairs(cls, n, indices, values):
        """From unsorted, unique indices."""
        order = np.argsort(indices, kind="stable")
        return cls(n, np.ascontiguousarray(indices[order], np.int32),
                   np.ascontiguousarray(values[order]))

    @property
    def dtype(self):
        return (self.dense if self.dense is not None else self.values).dtype

    def to_dense(self, out=None):
        if out is None:
            out = np.zeros(self.n, self.dtype)
        if self.dense is not None:
            out[...] = self.dense
        else:
            out[...] = 0
            out[self.indices] = self.values
        return out

    def message(self):
        """(tag, bytes) of the cheaper encoding of this vector."""
        if self.dense is None and \
                _cheaper_sparse(self.indices.size, self.n, self.values.itemsize):
            return SPARSE, np.concatenate([self.indices.view(np.uint8),
                                           self.values.view(np.uint8)])
        return DENSE, self.to_dense().view(np.uint8)

    @classmethod
    def from_message(cls, n, dtype, tag, data):
        if tag == DENSE:
            return cls(n, dense=data.view(dtype))
        count = data.size // (4 + np.dtype(dtype).itemsize)
        return cls(n, data[:4 * count].view(np.int32), data[4 * count:].view(dtype))

    def __add__(self, other):
        if self.dense is not None or other.dense is not None:
            dense, sparse = (self, other) if self.dense is not None else (other, self)
            total = dense.dense.copy()
            if sparse.dense is not None:
                total += sparse.dense
            else:
                total[sparse.indices] += sparse.values
            return SparseVector(self.n, dense=total)
        if (self.indices.size + other.indices.size) * 16 < self.n:    # few pairs: sort them
            union = np.union1d(self.indices, other.indices)
            values = np.zeros(union.size, self.dtype)
            values[np.searchsorted(union, self.indices)] += self.values
            values[np.searchsorted(union, other.indices)] += other.values
        else:                          # many: a dense scratch is cheaper than sorting them
            scratch = np.zeros(self.n, self.dtype)
            scratch[self.indices] = self.values
            scratch[other.indices] += other.values
            present = np.zeros(self.n, bool)
            present[self.indices] = present[other.indices] = True
            union = np.flatnonzero(present)
            values = scratch[union]
        merged = SparseVector(self.n, union.astype(np.int32, copy=False), values)
        return merged if _cheaper_sparse(union.size, self.n, values.itemsize) else \
            SparseVector(self.n, dense=merged.to_dense())


def _cheaper_sparse(count, n, itemsize):
    """Whether ``count`` (int32 index, value) pairs take fewer bytes than ``n`` values."""
    return count * (4 + itemsize) < n * itemsize


def _wait(request, poll):
    if poll is None:
        request.Wait()
    else:
        while not request.Test():
            time.sleep(poll)


def _receive(comm, MPI, n, dtype, source, poll):
    status = MPI.Status()
    if poll is None:
        comm.Probe(source=source, tag=MPI.ANY_TAG, status=status)
    else:
        while not comm.Iprobe(source=source, tag=MPI.ANY_TAG, status=status):
            time.sleep(poll)
    incoming = np.empty(status.Get_count(MPI.BYTE), np.uint8)
    comm.Recv(incoming, source=source, tag=status.Get_tag())
    return SparseVector.from_message(n, dtype, status.Get_tag(), incoming)


def _swap(comm, MPI, vector, partner, receive, poll):
    """Send ``vector`` to ``partner`` and (if ``receive``) get its vector; bytes sent."""
    tag, data = vector.message()
    request = comm.Isend(data, dest=partner, tag=tag)
    other = _receive(comm, MPI, vector.n, vector.dtype, partner, poll) if receive else None
    _wait(request, poll)
    return other, data.nbytes


def sparse_allreduce(comm, vector, poll=None):
    """Sum of every rank's ``SparseVector`` over the mpi4py communicator ``comm``.

    Returns ``(sum, bytes this rank sent)``; the sum is sparse or dense, the same on every
    rank. ``poll`` (seconds): test for messages every ``poll`` seconds and sleep in between
    instead of blocking in MPI, whose blocking calls spin: a helper thread that runs this
    while the main thread computes then leaves the core to the computation."""
    from mpi4py import MPI
    rank, size = comm.Get_rank(), comm.Get_size()
    if vector.n >= 2**31:
        raise ValueError(f"sparse_allreduce: vectors of {vector.n} elements need int64 "
                         f"indices; at most 2**31 - 1 are supported")
    sent = 0
    power = 1 << (size.bit_length() - 1)            # largest power of two <= size
    extra = size - power
    if rank >= power:                               # fold into a partner, wait for the sum
        _, nbytes = _swap(comm, MPI, vector, rank - power, False, poll)
        return _receive(comm, MPI, vector.n, vector.dtype, rank - power, poll), sent + nbytes
    if rank < extra:
        vector = vector + _receive(comm, MPI, vector.n, vector.dtype, rank + power, poll)
    mask = 1
    while mask < power:
        other, nbytes = _swap(comm, MPI, vector, rank ^ mask, True, poll)
        sent += nbytes
        vector = vector + other if rank < (rank ^ mask) else other + vector
        mask <<= 1
    if rank < extra:
        _, nbytes = _swap(comm, MPI, vector, rank + power, False, poll)
        sent += nbytes
    return vector, sent
