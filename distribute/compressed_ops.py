"""Compressed gradients in buckets that overlap the backward pass, as dense ones do.

``compressed_start`` (priority early) runs as soon as a bucket's last gradient exists: it
scales each gradient by this worker's share of the global batch, compresses it with its own
state (residual, DGC's velocity and accumulation: updated in place, exactly as the per-tensor
``compressed_allreduce`` does) and posts the bucket's exchange (``exchange.py``) without
waiting. Its output is a one-element token that orders the wait after it. ``compressed_wait``
(priority late) completes the exchange just before the updates that read the bucket and writes
the bucket's summed dense gradients into one flat buffer, which the strategy slices per
parameter. Compression of one bucket and the exchange of the previous ones overlap the
backward computation that is still to come.
"""
import numpy as np

from hiapi.runtime import timeline
from hiapi.graph import Variable, ops
from hiapi.graph.op import Op


class CompressedBucket:
    """Gradients compressed and exchanged together, and the run-time state of the exchange."""

    def __init__(self, label, names, shapes, dtype, compressor, exchange, stats):
        self.label, self.names, self.shapes = label, names, shapes
        self.sizes = [int(np.prod(shape)) for shape in shapes]
        self.total, self.dtype = sum(self.sizes), np.dtype(dtype)
        self.nbytes = self.total * self.dtype.itemsize
        self.compressor, self.exchange, self.stats = compressor, exchange, stats
        self.pending = None

    def members(self):
        """(offset, size, shape) of each gradient in the bucket's flat buffer."""
        offset = 0
        for size, shape in zip(self.sizes, self.shapes):
            yield offset, size, shape
            offset += size


class CompressedStart(Op):
    name = "compressed_start"
    priority = "early"
    stateful = True

    def __init__(self, bucket):
        self.bucket = bucket

    def key(self):
        return (id(self),)

    def infer(self, scale, *gradients_and_state):
        return (1,), self.bucket.dtype

    def grad(self, inputs, y, g):
        raise NotImplementedError("collectives are not differentiable")


class CompressedWait(Op):
    name = "compressed_wait"
    priority = "late"
    stateful = True

    def __init__(self, bucket):
        self.bucket = bucket

    def key(self):
        return (id(self),)

    def infer(self, token):
        return (self.bucket.total,), self.bucket.dtype


def compressed_start(out, scale, *arrays, bucket):
    count = len(bucket.sizes)
    gradients, state = arrays[:count], arrays[count:]
    slots = bucket.compressor.state_slots
    payloads = []
    for i, gradient in enumerate(gradients):
        member_state = dict(zip(slots, state[i * len(slots):(i + 1) * len(slots)]))
        with timeline.span("compress", "compression", tensor=bucket.names[i]):
            payloads.append(bucket.compressor.compress(gradient * scale, member_state))
    recorder = timeline.ACTIVE
    if recorder is not None:
        recorder.async_event("b", f"{bucket.exchange.name} {bucket.label}", bucket.label)
    bucket.pending = bucket.exchange.start(bucket, payloads)
    out[...] = 0


def compressed_wait(out, token, bucket):
    pending, bucket.pending = bucket.pending, None
    bucket.exchange.finish(bucket, pending, out)
    recorder = timeline.ACTIVE
    if recorder is not None:
        recorder.async_event("e", f"{bucket.exchange.name} {bucket.label}", bucket.label)


def register_kernels(backend):
    for name, kernel in (("compressed_start", compressed_start),
                         ("compressed_wait", compressed_wait)):
        backend.kernels.setdefault(name, kernel)


def split_buckets(pairs, cap_bytes):
    """(gradient, variable) pairs grouped last layer first (the backward pass produces their
    gradients first), a new bucket when ``cap_bytes`` would be passed or the dtype changes."""
    buckets, current, size = [], [], 0
    for gradient, variable in reversed(pairs):
        nbytes = int(np.prod(variable.shape)) * variable.dtype.itemsize
        if current and (size + nbytes > cap_bytes or gradient.dtype != current[0][0].dtype):
            buckets.append(current)
            current, size = [], 0
        current.append((gradient, variable))
        size += nbytes
    if current:
        buckets.append(current)
    return buckets


def compressed_buckets(pairs, scale, compressor, exchange, stats, cap_bytes):
    """The graph rewrite: reduced gradients for ``pairs``, in their order, through buckets
    of start/wait ops exchanged by ``exchange``; ``scale`` is the per-step batch-share
    placeholder."""
    from hiapi.backends import get_backend
    register_kernels(get_backend())
    reduced = {}
    for number, members in enumerate(split_buckets(pairs, cap_bytes)):
        dtype = members[0][0].dtype
        bucket = CompressedBucket(number, [v.name for _, v in members],
                                  [tuple(v.shape) for _, v in members], dtype, compressor,
                                  exchange, stats)
        state = [Variable(np.zeros(v.shape, v.dtype), name=f"{v.name}/{compressor.name}_{slot}",
                          trainable=False).read
                 for _, v in members for slot in compressor.state_slots]
        token = CompressedStart(bucket)(ops.cast(scale, dtype), *[g for g, _ in members],
                                        *state)
        flat = CompressedWait(bucket)(token)
        for (_, variable), (offset, size, shape) in zip(members, bucket.members()):
            part = ops.slice_axis(flat, 0, offset, offset + size)
            reduced[id(variable)] = ops.reshape(part, shape)
    return [reduced[id(v)] for _, v in pairs]
