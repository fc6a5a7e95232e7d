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

Freeing (``release_unused``). ``MPI.Win.Free`` is collective over the node and unmaps every
rank's segment, so it cannot run from a finalizer (the garbage collector reaches an object at
different moments on different ranks), and an array still viewing the window would read
unmapped memory. So an allocation is freed only when no array of the process views it any
more, and only at a point every rank reaches in the same order: ``release_unused`` (the
strategy calls it, through ``MPICommunicator.release_shared``, before it allocates the buckets
of a new train step). Whether anything still views an allocation is read from reference
counts: a numpy view of an array made by ``np.frombuffer`` keeps that array as its ``base``
(numpy collapses a chain of views down to it), so the P segment arrays made here are referenced
by every view of the window's memory, the caller's array, the views an executor holds, the
``_found`` cache's peer views, an allreduce in flight on a background thread. Counts above the
ones taken at allocation mean "in use". Each rank collects its garbage, names its unused
allocations, and the node frees those every rank named, in allocation order; one still in use
on any rank is kept for a later call. A freed window can therefore never be read through an
array: every array that could read it is gone. ``close`` frees everything and refuses,
naming the count, while an allocation is still in use.

The tables below are shared by every allocator of the process, and an allocator's ``find``
runs on its communicator's background thread (the overlapped bucket allreduce), its scratch
array may grow there too, while another communicator allocates or frees on the main thread:
``_lock`` guards every read and write of them.
"""
import bisect
import gc
import sys
import threading

import numpy as np

PAGE = 4096
_lock = threading.Lock()              # guards the four tables below (see the module's text)
# every allocation of the process: sorted start addresses, and the ``Region`` at each
_starts: list[int] = []
_regions: list["Region"] = []
# the per-call lookup: (address, nbytes, dtype, ranks) -> ([P arrays], tag)
_found: dict[tuple, tuple] = {}
_allocated = [0]  # the number of the process's last allocation (agreed over its ranks)


def live_allocations():
    """How many allocations the process holds now (every allocator's, scratch arrays
    included): what ``release_unused`` keeps bounded."""
    with _lock:
        return len(_regions)


def _references(segments):
    """The reference count of each segment array (every view of the window holds one)."""
    return [sys.getrefcount(segment) for segment in segments]


class Region:
    """One allocation: where this rank's segment lies, whose segments it holds (``ranks``, as
    world ranks), the P segment arrays, its agreed number, and the segments' reference counts
    when nothing but this record viewed them."""

    def __init__(self, start, end, ranks, segments, number, window):
        self.start, self.end, self.ranks, self.number = start, end, ranks, number
        self.segments, self.window = segments, window
        self.baseline = _references(segments)

    def in_use(self):
        """Whether any array besides this record's own still views the window (call with
        ``_found`` cleared: its peer views count)."""
        return _references(self.segments) != self.baseline


class WindowArrays:
    def __init__(self, node_comm):
        self.comm = node_comm
        from mpi4py import MPI
        self.rank, self.size = node_comm.Get_rank(), node_comm.Get_size()
        # the node's processes in its rank order, as world ranks: whose segments these are
        self.ranks = tuple(MPI.Group.Translate_ranks(
            node_comm.Get_group(), list(range(self.size)), MPI.COMM_WORLD.Get_group()))
        self._windows = []          # its Regions, in allocation order (the same on every rank)
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
        with _lock:
            last = _allocated[0]
        asked = self.comm.allgather((nbytes, last))
        if any(n != nbytes for n, _ in asked):
            sizes = ", ".join(f"rank {r}: {n:,} bytes" for r, (n, _) in enumerate(asked))
            raise ValueError(
                f"shared_array: the ranks asked for different sizes ({sizes}); the allocation "
                f"is collective: every rank asks for the same sizes in the same order (for a "
                f"Strategy's gradient buckets: every rank must build the same model)")
        number = max(n for _, n in asked) + 1
        window = MPI.Win.Allocate_shared(-(-nbytes // PAGE) * PAGE, 1, comm=self.comm)
        segments = [np.frombuffer(window.Shared_query(r)[0], np.uint8, count=nbytes)
                    for r in range(self.size)]
        start = segments[self.rank].__array_interface__["data"][0]
        region = Region(start, start + nbytes, self.ranks, segments, number, window)
        mine = segments[self.rank]
        mine.fill(0)                       # faulted in now, not in the first timed call
        with _lock:
            # another allocator's thread may have numbered one meanwhile: never go back
            _allocated[0] = max(_allocated[0], number)
            at = bisect.bisect(_starts, start)
            _starts.insert(at, start)
            _regions.insert(at, region)
        self._windows.append(region)
        self.comm.Barrier()                # every rank's segment zeroed before anyone reads it
        return mine[:count * dtype.itemsize].view(dtype), region

    def _free(self, region):
        """Free one allocation (collective: every rank frees the same ones in the same order);
        the caller has made sure no array views it any more."""
        with _lock:
            at = _starts.index(region.start)
            del _starts[at], _regions[at]
            _found.clear()                 # no view of the freed memory may be handed out
        self._windows.remove(region)
        region.segments = None             # the last arrays on this memory
        region.window.Free()
        region.window = None

    def _agreed_unused(self, regions):
        """The numbers of those of ``regions`` that no array views any more on any rank
        (collective over the node; each rank first collects its garbage: a dropped step may
        sit in a cycle)."""
        gc.collect()
        with _lock:
            _found.clear()                 # the cache's peer views are not a use
            unused = [region.number for region in regions if not region.in_use()]
        return set.intersection(*map(set, self.comm.allgather(unused)))

    def release_unused(self):
        """Free every allocation of this allocator that no array on any rank views any more
        (collective over the node: every rank calls it at the same point of the program).
        Returns how many were freed. An allocation still viewed on some rank (a compiled
        step still held, a caller's array) is kept, and freed by a later call once dropped."""
        regions = [region for region in self._windows if region is not self._scratch_window]
        if not regions:
            return 0                       # the same on every rank: allocations are collective
        agreed = self._agreed_unused(regions)
        freed = [region for region in regions if region.number in agreed]
        for region in freed:               # in allocation order, the same on every rank
            self._free(region)
        return len(freed)

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
            old, self._scratch, self._scratch_window = self._scratch_window, None, None
            if old is not None:
                self._retire(old)
            self._scratch, self._scratch_window = self._allocate(grown, np.uint8)
        return self._scratch[:nbytes].view(dtype)

    def _retire(self, region):
        """Free an outgrown scratch array now if no rank still views it (a caller may hold
        one handed out earlier: ``timing_array``'s), else leave it to ``release_unused`` as
        an ordinary allocation. The exchange of flags is also the barrier that proves every
        rank is past its last use (the call that used it ended in a fence)."""
        if region.number in self._agreed_unused([region]):
            self._free(region)

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
        with _lock:
            found = _found.get(key)
            if found is None:
                at = bisect.bisect(_starts, address) - 1
                if at < 0:
                    return None
                region = _regions[at]
                if address + array.nbytes > region.end or region.ranks != self.ranks:
                    return None
                lo = address - region.start
                found = _found[key] = (
                    [s[lo:lo + array.nbytes].view(array.dtype) for s in region.segments],
                    hash((region.number, lo, array.nbytes, array.dtype.num)))
        return found

    def close(self):
        """Free every allocation, the scratch array too (collective). Raises on every rank,
        freeing nothing, while any allocation is still viewed on some rank: freeing it would
        leave that array reading unmapped memory."""
        self._scratch = None               # this allocator's own view of its scratch
        scratch = self._scratch_window
        agreed = self._agreed_unused(self._windows)
        held = [region.number for region in self._windows if region.number not in agreed]
        if held:
            if scratch is not None:        # left as it was
                self._scratch = scratch.segments[self.rank][:]
            raise RuntimeError(
                f"WindowArrays.close: {len(held)} of {len(self._windows)} shared arrays are "
                f"still in use on some rank (an array, or a view of one, is alive: a compiled "
                f"train step holds its gradient buckets until the model is recompiled or "
                f"deleted); freeing them would leave those arrays reading unmapped memory. Drop "
                f"them first, or call release_unused() to free only what is unused")
        for region in list(self._windows):
            self._free(region)
        self._scratch_window = None
