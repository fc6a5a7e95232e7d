"""Recursive halving/doubling allreduce (Rabenseifner; Thakur, Rabenseifner & Gropp 2005).

Reduce-scatter by recursive halving: in round k each rank exchanges half of its current range
with the partner ``rank ^ 2^k`` and keeps (and sums) the other half; after log2(P) rounds each
rank owns the sum of 1/P of the vector. Allgather by recursive doubling retraces the rounds.
Cost: 2 log2(P) alpha + 2 (P-1)/P n beta + (P-1)/P n gamma, the same bytes as the ring in
log2(P) instead of P-1 latencies, so it wins for small and medium messages at larger P.

A rank count that is not a power of two is folded first (as MPICH does): of the first 2r ranks
(r = P - 2^floor(log2 P)) each even one hands its vector to the odd one beside it and sits
out, then receives the result at the end.
"""
import numpy as np

from hiapi.distribute.algorithms.base import AllreduceAlgorithm, flat_view, steps


class HalvingDoublingAllreduce(AllreduceAlgorithm):
    name = "halving_doubling"

    def __init__(self, comm):
        super().__init__(comm)
        self.p2 = 1 << (self.size.bit_length() - 1)          # largest power of two <= P
        self.extra = self.size - self.p2
        r = self.rank
        if r < 2 * self.extra:
            self.virtual = r // 2 if r % 2 else None          # even ranks sit out
        else:
            self.virtual = r - self.extra
        self._buffers = {}

    def _real(self, virtual):
        return 2 * virtual + 1 if virtual < self.extra else virtual + self.extra

    def _buffer(self, dtype, length):
        buffer = self._buffers.get(dtype)
        if buffer is None or len(buffer) < length:
            buffer = self._buffers[dtype] = np.empty(length, dtype)
        return buffer[:length]

    def __call__(self, array):
        if self.size == 1:
            return array
        flat, comm = flat_view(array, "halving_doubling"), self.comm
        if self.rank < 2 * self.extra:                        # fold to a power of two
            if self.virtual is None:
                comm.Send(flat, self.rank + 1, 11)
                comm.Recv(flat, self.rank + 1, 12)
                return array
            incoming = self._buffer(flat.dtype, len(flat))
            comm.Recv(incoming, self.rank - 1, 11)
            with np.errstate(over="ignore", invalid="ignore"):    # silent, as MPI's sum
                np.add(flat, incoming, out=flat)
        self._halving_doubling(flat)
        if self.rank < 2 * self.extra:
            comm.Send(flat, self.rank - 1, 12)
        return array

    def _halving_doubling(self, flat):
        comm, me = self.comm, self.virtual
        lo, hi, trail = 0, len(flat), []
        mask = self.p2 >> 1
        incoming = self._buffer(flat.dtype, len(flat) // 2 + 1)
        while mask:                                           # reduce-scatter by halving
            partner = self._real(me ^ mask)
            mid = lo + (hi - lo) // 2
            keep, give = ((mid, hi), (lo, mid)) if me & mask else ((lo, mid), (mid, hi))
            mine = flat[keep[0]:keep[1]]
            buffer = incoming[:len(mine)]
            comm.Sendrecv(flat[give[0]:give[1]], partner, 13, buffer, partner, 13)
            with np.errstate(over="ignore", invalid="ignore"):
                np.add(mine, buffer, out=mine)
            trail.append((partner, keep, give))
            lo, hi = keep
            mask >>= 1
        for partner, keep, give in reversed(trail):           # allgather by doubling
            comm.Sendrecv(flat[keep[0]:keep[1]], partner, 14, flat[give[0]:give[1]], partner, 14)

    def latency_steps(self, size):
        p2 = 1 << (size.bit_length() - 1)
        return 2 * steps(p2) + (2 if size != p2 else 0)

    def bandwidth_time(self, nbytes, costs, size):
        share = (size - 1) / size * nbytes
        p2 = 1 << (size.bit_length() - 1)
        fold = 2 * nbytes * costs.beta + nbytes * costs.gamma if size != p2 else 0.0
        return fold + 2 * share * costs.beta + share * costs.gamma
