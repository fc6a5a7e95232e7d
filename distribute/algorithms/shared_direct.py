"""Allreduce through MPI shared memory with one fence: every rank sums every rank's slot itself.

Per chunk: every rank copies its chunk into its own shared slot; fence; every rank adds the P
slots, in rank order, straight into its own array (``np.add(slot_0, slot_1, out=array)``, then
the others), so the sum lands where the caller wants it with no copy out. Against
``shared_memory`` (copy in, fence, sum a 1/P slice, fence, copy the P slices out) it trades
(P-1)(1 - 1/P) of a chunk's additions for one fence and one copy of the chunk: on 2 ranks it
moves fewer bytes outright (one copy and one addition of n bytes, against two copies and half
an addition), and on a loaded or oversubscribed machine, where a fence is a wait for the
slowest rank to be scheduled, one fence instead of two is most of the saving. Beyond 2 ranks
the sum is done in blocks that stay in the L2 cache, so the running total is read from cache,
not memory, by each of the P-1 additions. Cost per chunk of c bytes: 1 fence + c copy +
(P-1) c gamma.

Every rank adds the same numbers in the same order, so every rank gets bit-identical results.
The slots are double-buffered (``SharedSlots``): a rank writing a slot has passed the fence of
the chunk before, so every rank has finished reading what that slot held two chunks ago.
"""
import numpy as np

from hiapi.distribute.algorithms.shared_memory import OneNodeAllreduce

BLOCK_BYTES = 128 << 10      # a running total and one addend: 256 KB, inside a 1 MB L2


def sum_slots(slots, out, block):
    """``out[:] = slots[0] + slots[1] + ...`` in rank order (each slot as long as ``out``),
    ``block`` elements at a time when there are more than two slots."""
    n = len(out)
    with np.errstate(over="ignore", invalid="ignore"):     # silent on inf, as MPI's sum is
        if len(slots) == 2:
            np.add(slots[0][:n], slots[1][:n], out=out)
            return
        for lo in range(0, n, block):
            hi = min(n, lo + block)
            total = out[lo:hi]
            np.add(slots[0][lo:hi], slots[1][lo:hi], out=total)
            for slot in slots[2:]:
                np.add(total, slot[lo:hi], out=total)


class SharedDirectAllreduce(OneNodeAllreduce):
    name = "shared_direct"

    def __call__(self, array):
        if self.size == 1:
            return array
        for part, slots in self.chunks(array):
            slots[self.rank][:len(part)] = part
            self.shared.fence()
            sum_slots(slots, part, BLOCK_BYTES // part.itemsize)
        return array

    def latency_steps(self, size):
        return 1                                      # one fence

    def bandwidth_time(self, nbytes, costs, size):
        return self.extra_chunks(nbytes) * costs.barrier + nbytes * costs.copy + \
            (size - 1) * nbytes * costs.gamma
