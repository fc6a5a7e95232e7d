"""How a bucket of compressed gradients travels between ranks, in two halves: ``start`` posts
the exchange without waiting (called by the bucket's start op, early in the backward pass) and
``finish`` completes it and writes the summed dense gradients (called by its wait op, late).

- ``AllgatherExchange``: every rank's payload bytes to every rank (``MPI_Iallgatherv``), each
  rank summing all P payloads with the compressor's ``decompress``. Works for every
  compressor; what a rank receives grows with P.
- ``SparseAllreduceExchange``: for compressors whose payload is (indices, values) pairs
  (top-k, threshold, DGC): one sparse vector per bucket summed by recursive doubling
  (``sparse_allreduce.py``), log2(P) messages a rank, each at most the dense bucket. It runs on
  a helper thread with its own duplicate communicator (MPI_THREAD_MULTIPLE), so the exchange
  progresses while the main thread computes the rest of the backward pass; without that
  thread level it runs inside ``finish``.

Buckets are started and finished in the same order on every rank, and the one helper thread
runs them in that order, so the messages of different buckets never cross.
"""
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from hiapi.runtime import timeline
from hiapi.distribute.sparse_allreduce import SparseVector, sparse_allreduce


def _watched_wait(communicator, what, wait):
    """``wait()``, named to the collective stall inspector while the main thread blocks."""
    watchdog = getattr(communicator, "watchdog", None)
    if watchdog is None:
        return wait()
    watchdog.started += 1
    watchdog.last = watchdog.current = (watchdog.started, what, None, watchdog.progress)
    try:
        return wait()
    finally:
        watchdog.current = None


class AllgatherExchange:
    name = "allgather"

    def __init__(self, communicator):
        self.communicator = communicator

    def start(self, bucket, payloads):
        arrays = [np.ascontiguousarray(a).reshape(-1) for payload in payloads for a in payload]
        header = np.array([a.size for a in arrays], np.int64)
        mine = np.concatenate([header.view(np.uint8)] + [a.view(np.uint8) for a in arrays])
        dtypes = [a.dtype for a in arrays]
        per_member = [len(p) for p in payloads]
        bucket.stats.record(sum(a.nbytes for a in arrays), bucket.nbytes)
        communicator = self.communicator
        if communicator.size == 1:
            return mine[None], [mine.size], dtypes, per_member, None
        comm = communicator.comm
        sizes = comm.allgather(mine.size)               # a few bytes, blocking
        gathered = np.empty(sum(sizes), np.uint8)
        request = comm.Iallgatherv(mine, [gathered, sizes])
        return gathered, sizes, dtypes, per_member, request

    def finish(self, bucket, pending, out):
        gathered, sizes, dtypes, per_member, request = pending
        if request is not None:
            _watched_wait(self.communicator, "wait for compressed allgather", request.Wait)
        by_rank = []
        for part in np.split(gathered.reshape(-1), np.cumsum(sizes)[:-1]):
            counts = part[:8 * len(dtypes)].view(np.int64)
            arrays, offset = [], 8 * len(dtypes)
            for count, dtype in zip(counts, dtypes):
                nbytes = int(count) * dtype.itemsize
                arrays.append(part[offset:offset + nbytes].view(dtype).copy())
                offset += nbytes
            members, first = [], 0
            for n in per_member:
                members.append(arrays[first:first + n])
                first += n
            by_rank.append(members)
        for i, (start, size, shape) in enumerate(bucket.members()):
            payloads = [members[i] for members in by_rank]
            out[start:start + size] = bucket.compressor.decompress(
                payloads, shape, out.dtype).reshape(-1)


class SparseAllreduceExchange:
    name = "sparse_allreduce"

    def __init__(self, communicator):
        self.communicator = communicator
        self._comm = self._worker = None

    def _setup(self):
        """A duplicate communicator (collective: every rank's first start does it) and the
        helper thread, when MPI allows calls from several threads."""
        from mpi4py import MPI
        self._comm = self.communicator.comm.Dup()
        if MPI.Query_thread() == MPI.THREAD_MULTIPLE:
            self._worker = ThreadPoolExecutor(1, thread_name_prefix="hiapi-sparse-allreduce")

    def start(self, bucket, payloads):
        offsets = np.cumsum([0] + bucket.sizes[:-1])
        indices = np.concatenate([p[0].astype(np.int64) + o for p, o in zip(payloads, offsets)])
        values = np.concatenate([p[1].astype(bucket.dtype, copy=False) for p in payloads])
        vector = SparseVector.from_pairs(bucket.total, indices, values)
        if self.communicator.size == 1:
            bucket.stats.record(indices.size * (4 + values.itemsize), bucket.nbytes)
            return vector, 0
        if self._comm is None:
            self._setup()
        if self._worker is None:
            return vector, None                          # run in finish
        return self._worker.submit(self._reduce, vector, bucket.label, self.POLL), None

    POLL = 2e-4       # seconds: the helper thread sleeps between tests, MPI would spin

    def _reduce(self, vector, label, poll=None):
        with timeline.span("sparse allreduce", "exchange", bucket=label):
            return sparse_allreduce(self._comm, vector, poll)

    def finish(self, bucket, pending, out):
        work, sent = pending
        if sent is not None:                             # one rank: nothing was exchanged
            total = work
        elif self._worker is None:
            total, sent = self._reduce(work, bucket.label)
        else:
            total, sent = _watched_wait(self.communicator, "wait for sparse allreduce",
                                        work.result)
        if self.communicator.size > 1:
            bucket.stats.record(sent, bucket.nbytes)
        total.to_dense(out)


def make(name, communicator, compressor):
    """The exchange called ``name`` ("auto", "allgather" or "sparse_allreduce"). "auto" is the
    allgather: on the quiet 2-core machine the sparse allreduce moved fewer bytes from 4 ranks
    up but took 5-8x the allgather's time for 0.1-1 % density (Python per round), so it is
    chosen by name where bytes matter more than time (a slow network between nodes)."""
    pairs = getattr(compressor, "pairs", False)
    if name == "auto":
        name = "allgather"
    if name == "allgather":
        return AllgatherExchange(communicator)
    if name == "sparse_allreduce":
        if not pairs:
            raise ValueError(f"Strategy(sparse_exchange='sparse_allreduce') needs a compressor "
                             f"that sends (indices, values) pairs (topk, threshold, dgc), got "
                             f"compression={compressor.name!r}")
        return SparseAllreduceExchange(communicator)
    raise ValueError(f"Strategy: sparse_exchange must be 'auto', 'allgather' or "
                     f"'sparse_allreduce', got {name!r}")
