"""Allreduce of arrays that already live in MPI shared memory, summed where they lie.

For an array from ``allocate`` (``WindowArrays``: the strategy's gradient buckets are), every
rank's copy is mapped in every process. One call is:

1. fence: every rank has finished writing its array;
2. rank j sums slice j (1/P of the elements) of all P copies, block by block so the running
   total stays in cache (``np.add(..., out=)``), and writes each finished block into its own
   copy and into every other rank's copy: the reduce-scatter and the allgather in one pass;
3. fence: every slice has reached every copy (and nobody reads this rank's copy any more, so
   the caller may overwrite it).

Nothing is copied in or out and no message is sent. Memory traffic per rank for an n-byte
array, bytes read plus bytes written (counted, not measured: this VM has no hardware
counters): it reads n (its slice of P copies) and writes n (its slice into P copies), 2n in
all. MPICH's shared-memory allreduce (reduce-scatter + allgather through copy-in/copy-out
cells) copies each of its 2(P-1)/P n bytes of messages twice, into the shared cell and out,
and reads two and writes one for each of its (P-1)/P n reduced bytes: 11(P-1)/P n, 5.5n on 2
ranks and 8.25n on 4; ``shared_memory`` (copy in, sum a slice, copy out) (5 + 1/P) n. Two fences (``FlagFence``) per call, whatever the size: no chunks, since the array is
already in the window and its own length.

An array not in shared memory (a caller's own) is copied into a shared scratch array, reduced
the same way and copied back: correct, but with the copies this algorithm exists to avoid.
Every rank must pass the same kind of array (all from ``allocate``, the same allocation, or
all private), as every rank does when it runs the same program; the first fence carries a tag
naming the array, so ranks that passed different ones all raise instead of summing wrong
memory (and where the scratch array must grow, a collective a rank with a shared array would
not join, an extra fence checks the tags first).

Every element is summed by exactly one rank and copied to the others, so every rank gets
identical bits.
"""
import numpy as np

from hiapi.distribute.algorithms.base import AllreduceAlgorithm, flat_view
from hiapi.distribute.algorithms.flag_fence import FlagFence
from hiapi.distribute.algorithms.shared_window import require_one_node
from hiapi.distribute.algorithms.window_arrays import WindowArrays
from hiapi.distribute.ring import segment_bounds

# the running total of a block and the block of one addend: inside a 1 MB L2. At 16 MB on 2
# ranks, blocks of 64 KB / 256 KB / 1 MB / a whole 8 MB slice took 0.34 / 0.23 / 0.27 / 0.30x
# native's time (one loaded run each): within the noise, so the cache-sized choice is kept
BLOCK_BYTES = 256 << 10


def reduce_and_push(copies, owner, lo, hi, block):
    """Sum elements ``lo:hi`` of every copy into copy ``owner`` (its own values first, then
    the others in rank order), ``block`` elements at a time, and copy each finished block into
    every other copy while it is still in cache."""
    total_of, others = copies[owner], copies[:owner] + copies[owner + 1:]
    with np.errstate(over="ignore", invalid="ignore"):     # silent on inf, as MPI's sum is
        for start in range(lo, hi, block):
            end = min(hi, start + block)
            total = total_of[start:end]
            for copy in others:
                np.add(total, copy[start:end], out=total)
            for copy in others:
                np.copyto(copy[start:end], total)


class ZeroCopyAllreduce(AllreduceAlgorithm):
    name = "zero_copy"

    def __init__(self, comm, block_bytes=BLOCK_BYTES):
        super().__init__(comm)
        node = require_one_node(comm, self.name)
        self.arrays = WindowArrays(node)
        self.fence = FlagFence(node)
        self.block_bytes = block_bytes

    def allocate(self, count, dtype):
        """An array in shared memory that this algorithm reduces in place (collective)."""
        return self.arrays.allocate(count, dtype)

    def scratch(self, count, dtype):
        return self.arrays.scratch(count, dtype)

    def release_unused(self):
        return self.arrays.release_unused()

    def __call__(self, array):
        if self.size == 1:
            return array
        flat = flat_view(array, self.name)
        found = self.arrays.find(flat)
        if found is not None:
            self._reduce(*found)
            return array
        if not self.arrays.scratch_holds(flat.nbytes):
            # growing the scratch array is a collective (a barrier, a window freed and one
            # allocated): a rank that passed a shared array would never join it, so first
            # check at a fence that every rank is here to grow it to the same size (a tag of
            # ints only: a str's hash differs from process to process)
            self._check_same(self.fence, hash((-1, flat.nbytes)), flat.nbytes)
        scratch = self.arrays.scratch(len(flat), flat.dtype)
        np.copyto(scratch, flat)
        self._reduce(*self.arrays.find(scratch))
        np.copyto(flat, scratch)
        return array

    def _reduce(self, copies, tag):
        bounds = segment_bounds(len(copies[0]), self.size)
        fence = self.fence
        self._check_same(fence, tag, copies[0].nbytes)
        reduce_and_push(copies, self.rank, bounds[self.rank], bounds[self.rank + 1],
                        max(1, self.block_bytes // copies[0].itemsize))
        fence(tag)         # the same tag: a rank arriving here early leaves its tag as it was

    def _check_same(self, fence, tag, nbytes):
        """A fence carrying ``tag``; raises on every rank unless every rank passed the same.
        Before raising, one more fence with the same tag: a rank that raised and went on to its
        next call would otherwise publish that call's tag over this one while a slower rank
        had yet to read it, and that rank would see every tag alike and sum alone."""
        fence(tag)
        if fence.tags.tolist().count(tag) != self.size:       # every rank sees it: all raise
            fence(tag)
            raise RuntimeError(
                f"zero_copy allreduce: the ranks passed different arrays ({nbytes} bytes "
                f"here): every rank must pass the same shared_array (or a view at the same "
                f"offset of it), or every rank an array of its own of the same size")

    def latency_steps(self, size):
        return 2                                      # two fences

    def bandwidth_time(self, nbytes, costs, size):
        # each rank: (P-1) additions over 1/P of the bytes, then P-1 pushes of that slice
        return (size - 1) / size * nbytes * (costs.gamma + costs.copy)
