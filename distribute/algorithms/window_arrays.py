"""Arrays that live in MPI shared memory, so an allreduce can read every rank's copy in place.

``shared_memory`` and ``shared_direct`` copy the caller's array into a shared slot, reduce,
and copy the result back out: two of the bytes moved per call are copies that exist only
because the data lives in private memory. ``WindowArrays.allocate`` removes them: it returns a
numpy array *in* a shared window (``MPI.Win.Allocate_shared``), one per rank, at the same
offset of each rank's segment, and ``peers(array)`` gives the P arrays, the other ranks'
copies mapped into this process. A gradient bucket allocated here (``Strategy`` does, through
``MPICommunicator.shared_array``) is written by the backward pass straight into the window, and
``ZeroCopyAllreduce`` sums it where it lies.

Allocation is collective over the node: every rank allocates the same sizes in the same order
(as every rank builds the same buckets), so the k-th array is at the same place everywhere;
ranks asking for different sizes all raise, naming them.
Each allocation is its own window, rounded up to whole pages so every rank's segment, and the
array in it, starts on a page (MPICH lays the segments end to end). ``peers`` also takes a view
of an allocated array (a prefix, a reshape): it finds the allocation by the array's address,
among every ``WindowArrays`` of the process over the same ranks (an array one communicator
allocated is summed in place by another's ``zero_copy``: ``auto``'s candidate, a benchmark's).
"""
import bisect

import numpy as np

PAGE = 4096
# every allocation of the process: sorted start addresses, and (start, end, ranks, segments)
_starts: list[int] = []
_regions: list[tuple] = []
_found: dict[tuple, tuple] = {}       # (address, nbytes, dtype, ranks) -> ([P arrays], tag): the per-call lookup
_allocated = [0]  # the number of the process's last allocation (agreed over its ranks)


class WindowArrays:
    def __init__(self, node_comm):
        self.comm = node_comm
        from mpi4py import MPI
        self.rank, self.size = node_comm.Get_rank(), node_comm.Get_size()
        # the node's processes in its rank order, as world ranks: whose segments these are
        self.ranks = tuple(MPI.Group.Translate_ranks(
            node_comm.Get_group(), list(range(self.size)), MPI.COMM_WORLD.Get_group()))
        self._windows = []          # MPI windows, kept open for the arrays' lifetime
        self._scratch = self._scratch_window = None

    def allocate(self, count, dtype):
        """A zeroed 1-D ``dtype`` array of ``count`` elements in shared memory (collective over
        the node: every rank asks for the same sizes in the same order)."""
        return self._allocate(count, dtype)[0]

    def _allocate(self, count, dtype):
        from mpi4py import MPI
        dtype = np.dtype(dtype)
        nbytes = max(count * dtype.itemsize, 1)
        # Every rank's size and count of allocations, before allocating. The sizes: a rank
        # asking for another size (a gradient bucket of a model built differently) would fail
        # alone reading the others' segments, or sum memory that is not theirs; this way all
        # raise, saying so. The counts: the allocation's number, in the tags ``find`` gives,
        # must be the same on every rank, but a process's own count is not (ranks that also
        # allocated on different sub-communicators made different numbers of allocations), so
        # the ranks take one past the largest (which every later number of each exceeds).
        asked = self.comm.allgather((nbytes, _allocated[0]))
        if any(n != nbytes for n, _ in asked):
            sizes = ", ".join(f"rank {r}: {n:,} bytes" for r, (n, _) in enumerate(asked))
            raise ValueError(
                f"shared_array: the ranks asked for different sizes ({sizes}); the allocation "
                f"is collective: every rank asks for the same sizes in the same order (for a "
                f"Strategy's gradient buckets: every rank must build the same model)")
        number = _allocated[0] = max(n for _, n in asked) + 1
        window = MPI.Win.Allocate_shared(-(-nbytes // PAGE) * PAGE, 1, comm=self.comm)
        self._windows.append(window)
        segments = [np.frombuffer(window.Shared_query(r)[0], np.uint8, count=nbytes)
                    for r in range(self.size)]
        mine = segments[self.rank]
        mine.fill(0)                       # faulted in now, not in the first timed call
        start = mine.__array_interface__["data"][0]
        at = bisect.bisect(_starts, start)
        _starts.insert(at, start)
        _regions.insert(at, (start, start + nbytes, self.ranks, segments, number))
        self.comm.Barrier()                # every rank's segment zeroed before anyone reads it
        return mine[:count * dtype.itemsize].view(dtype), window

    def _free(self, window):
        """Free one allocation (collective); its arrays must not be used again."""
        start = np.frombuffer(window.Shared_query(self.rank)[0], np.uint8).__array_interface__[
            "data"][0]
        at = _starts.index(start)
        del _starts[at], _regions[at]
        _found.clear()                     # no view of the freed memory may be handed out
        self._windows.remove(window)
        window.Free()

    def scratch_holds(self, nbytes):
        """Whether ``scratch`` has ``nbytes`` without growing (growing is collective)."""
        return self._scratch is not None and self._scratch.nbytes >= nbytes

    def scratch(self, count, dtype):
        """A reusable shared array of at least ``count`` elements (collective when it grows;
        every rank asks for the same sizes): where a call on private memory is copied."""
        dtype = np.dtype(dtype)
        nbytes = count * dtype.itemsize
        if not self.scratch_holds(nbytes):
            grown = 1 << max(nbytes - 1, PAGE).bit_length()
            if self._scratch_window is not None:       # every rank is past its last use:
                self.comm.Barrier()                    # the call that used it ended in a fence
                self._free(self._scratch_window)
            self._scratch, self._scratch_window = self._allocate(grown, np.uint8)
        return self._scratch[:nbytes].view(dtype)

    def peers(self, array):
        """Every rank's copy of ``array`` (a contiguous array inside one allocation), in rank
        order; None when ``array`` is not in shared memory allocated over these ranks."""
        found = self.find(array)
        return found and found[0]

    def find(self, array):
        """``(peers(array), tag)`` or None. The tag names the allocation, the offset in it and
        the size and dtype, the same on every rank for the same array: ranks compare tags to
        catch a call where they passed different arrays (whose sums would be silently wrong)."""
        address = array.__array_interface__["data"][0]
        key = (address, array.nbytes, array.dtype, self.ranks)
        found = _found.get(key)
        if found is None:
            at = bisect.bisect(_starts, address) - 1
            if at < 0:
                return None
            start, end, ranks, segments, number = _regions[at]
            if address + array.nbytes > end or ranks != self.ranks:
                return None
            lo = address - start
            found = _found[key] = (
                [s[lo:lo + array.nbytes].view(array.dtype) for s in segments],
                hash((number, lo, array.nbytes, array.dtype.num)))
        return found

    def close(self):
        for window in list(self._windows):
            self._free(window)
        self._scratch = self._scratch_window = None
