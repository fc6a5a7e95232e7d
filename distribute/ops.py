"""Collective graph ops, inserted by ``Strategy`` between gradients and optimizer updates.

``allreduce_start`` packs a bucket of gradients (scaled by this worker's share of the global
batch) into one flat buffer and starts a non-blocking allreduce on it; it asks to run *early*,
so the scheduler issues it as soon as the bucket's gradients exist. ``allreduce_wait`` completes
it and asks to run *late*, just before the updates that read the bucket: communication of one
bucket overlaps the backward computation of the next. ``compressed_allreduce`` exchanges one
gradient through a compressor (blocking; its state Variables are updated in place, so the op
is marked stateful for the memory planner).

``shared_allreduce_start``/``shared_allreduce_wait`` are the same pair for a bucket whose flat
buffer the communicator gave it in shared memory (``MPICommunicator.shared_array``: with
``algorithm="zero_copy"``, or ``"auto"`` on one node): the start writes the scaled gradients
straight into that buffer and outputs only a one-element token (the planner reserves no arena
memory for the bucket), and the wait returns the shared buffer itself, summed where it lies,
as the view its readers (the slices for each parameter's update) read.
"""
import numpy as np

from hiapi.runtime import timeline
from hiapi.graph.op import Op


class Bucket:
    """Gradients reduced together, and the run-time state of their collective."""

    def __init__(self, communicator, sizes, stats):
        self.communicator, self.sizes, self.stats = communicator, sizes, stats
        self.request = None


class AllreduceStart(Op):
    name = "allreduce_start"
    priority = "early"
    stateful = True

    def __init__(self, bucket):
        self.bucket = bucket

    def key(self):
        return (id(self),)

    def infer(self, scale, *gradients):
        return (sum(self.bucket.sizes),), gradients[0].dtype

    def grad(self, inputs, y, g):
        raise NotImplementedError("collectives are not differentiable")


class AllreduceWait(Op):
    name = "allreduce_wait"
    priority = "late"
    view_of = 0
    stateful = True

    def __init__(self, bucket):
        self.bucket = bucket

    def key(self):
        return (id(self),)

    def infer(self, flat):
        return flat.shape, flat.dtype


class SharedBucket(Bucket):
    """A bucket whose flat buffer lives in shared memory, reused every step; its window is
    freed once no step holds the bucket (``WindowArrays.release_unused``)."""

    def __init__(self, communicator, sizes, stats, buffer):
        super().__init__(communicator, sizes, stats)
        self.buffer = buffer


class SharedAllreduceStart(AllreduceStart):
    name = "shared_allreduce_start"

    def infer(self, scale, *gradients):
        return (1,), gradients[0].dtype          # a token: the values go to bucket.buffer


class SharedAllreduceWait(AllreduceWait):
    name = "shared_allreduce_wait"

    def infer(self, token):
        return (sum(self.bucket.sizes),), token.dtype


class CompressedAllreduce(Op):
    name = "compressed_allreduce"
    stateful = True

    def __init__(self, communicator, compressor, slots, stats):
        self.communicator, self.compressor = communicator, compressor
        self.slots, self.stats = slots, stats

    def key(self):
        return (id(self),)

    def infer(self, gradient, scale, *state):
        return gradient.shape, gradient.dtype


def allreduce_start(out, scale, *gradients, bucket):
    offset = 0
    for gradient, size in zip(gradients, bucket.sizes):
        np.multiply(gradient.reshape(-1), scale, out=out[offset:offset + size])
        offset += size
    bucket.stats.record(out.nbytes, out.nbytes)
    bucket.request = bucket.communicator.iallreduce(out)
    if timeline.ACTIVE is not None:          # the allreduce in flight, start to wait
        timeline.ACTIVE.async_event("b", "allreduce", id(bucket), args={"bytes": out.nbytes})


def allreduce_wait(flat, bucket):
    bucket.request.wait()
    bucket.request = None
    if timeline.ACTIVE is not None:
        timeline.ACTIVE.async_event("e", "allreduce", id(bucket))
    return flat


def shared_allreduce_start(token, scale, *gradients, bucket):
    allreduce_start(bucket.buffer, scale, *gradients, bucket=bucket)


def shared_allreduce_wait(token, bucket):
    return allreduce_wait(bucket.buffer, bucket)


def compressed_allreduce(out, gradient, scale, *state, communicator, compressor, slots, stats):
    payload = compressor.compress(gradient * scale, dict(zip(slots, state)))
    per_array = [communicator.allgather(array) for array in payload]
    by_rank = list(zip(*[np.split(gathered, np.cumsum(sizes)[:-1])
                         for gathered, sizes in per_array]))
    out[...] = compressor.decompress(by_rank, out.shape, out.dtype)
    stats.record(sum(a.nbytes for a in payload), gradient.nbytes)


def register_kernels(backend):
    for name, kernel in (("allreduce_start", allreduce_start),
                         ("allreduce_wait", allreduce_wait),
                         ("shared_allreduce_start", shared_allreduce_start),
                         ("shared_allreduce_wait", shared_allreduce_wait),
                         ("compressed_allreduce", compressed_allreduce)):
        backend.kernels.setdefault(name, kernel)
