"""cupy kernels for the neural-network ops: cross-entropies, one-hot, gather/scatter and the
counter-based random numbers behind dropout.

Where the numpy kernel would read device data back to the host (a label range check, the random
counter), these kernels keep the value on the GPU: a step then queues all its work without the
host waiting for the GPU to catch up.
"""
import cupy
import cupyx
import numpy as np

from hiapi.backends.cupy_backend.registry import backend
from hiapi.backends.kernel_errors import gather_range_error

register = backend.register


def _log_softmax(logits):
    """Stable: the row maximum is subtracted before exp (log-sum-exp with a max shift)."""
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - cupy.log(cupy.exp(shifted).sum(axis=-1, keepdims=True))


@register("softmax_cross_entropy")
def softmax_cross_entropy(out, logits, labels):
    cupy.sum(labels * _log_softmax(logits), axis=-1, dtype=out.dtype, out=out)
    cupy.negative(out, out=out)


# One thread per row: the negated log-probability of the row's label. A label outside
# [0, depth) gives NaN and widens status = [lowest bad label or 0, highest bad label or depth-1]
# (atomics only on bad rows), which the backend reads back with the step's outputs.
_PICK = cupy.ElementwiseKernel(
    "raw T logp, L label, int64 depth", "T loss, raw int64 status",
    """
    const long long k = (long long)label;
    if (k < 0 || k >= depth) {
        loss = (T)CUDART_NAN;
        if (k < 0) atomicMin(&status[0], k); else atomicMax(&status[1], k);
    } else {
        loss = -logp[(long long)i * depth + k];
    }
    """, "hiapi_sparse_cross_entropy_pick")


@register("sparse_softmax_cross_entropy")
def sparse_softmax_cross_entropy(out, logits, labels):
    depth = logits.shape[-1]
    status = cupy.empty(2, cupy.int64)
    status[0], status[1] = 0, depth - 1            # fills on the device, no transfer
    _PICK(_log_softmax(logits), labels, depth, out, status)
    backend.checks.add(status, lambda host: _label_error(host, depth))


def _label_error(status, depth):
    """numpy's message for an out-of-range label (the lowest negative or the highest one)."""
    low, high = int(status[0]), int(status[1])
    if low >= 0 and high < depth:
        return None
    bad = low if low < 0 else high
    return (f"sparse categorical cross-entropy: label {bad} is outside the {depth} classes "
            f"[0, {depth - 1}] of the predictions")


_ONE_HOT = cupy.ElementwiseKernel(
    "raw I indices, int64 depth", "T out",
    "out = ((long long)indices[(long long)i / depth] == (long long)i % depth) ? (T)1 : (T)0",
    "hiapi_one_hot")


@register("one_hot")
def one_hot(out, indices, depth, dtype):
    """Rows of out-of-range indices are all zeros (numpy's put_along_axis would raise)."""
    _ONE_HOT(indices, depth, out)


# One thread per output element. An index outside [0, rows) writes zeros and widens
# status = [lowest bad index or 0, highest bad index or rows-1], read back with the step's
# outputs (as the sparse cross-entropy's label check), so no step waits on the GPU.
_GATHER = cupy.ElementwiseKernel(
    "raw T table, raw I indices, int64 rows, int64 cols", "T out, raw int64 status",
    """
    const long long k = (long long)indices[(long long)i / cols];
    if (k < 0 || k >= rows) {
        out = (T)0;
        if ((long long)i % cols == 0) {
            if (k < 0) atomicMin(&status[0], k); else atomicMax(&status[1], k);
        }
    } else {
        out = table[k * cols + (long long)i % cols];
    }
    """, "hiapi_checked_gather")


@register("gather")
def gather(out, table, indices, where):
    rows, cols = table.shape[0], int(np.prod(table.shape[1:]))
    status = cupy.empty(2, cupy.int64)
    status[0], status[1] = 0, rows - 1
    _GATHER(cupy.ascontiguousarray(table), cupy.ascontiguousarray(indices), rows, cols, out,
            status)
    backend.checks.add(status, lambda host: _gather_error(host, where, rows))


def _gather_error(status, where, rows):
    """The numpy kernel's message for the lowest negative or the highest too-large index."""
    low, high = int(status[0]), int(status[1])
    if low >= 0 and high < rows:
        return None
    return gather_range_error(where, low if low < 0 else high, rows)


@register("scatter_add")
def scatter_add(out, updates, indices, like):
    # atomic adds: repeated indices accumulate (as numpy's add.at), in no fixed order
    out.fill(0)
    cupyx.scatter_add(out, indices, updates)


# hiapi.backends.splitmix.splitmix64_uniform as one kernel: z = index + seed * C1 + counter * C2
# (mod 2**64), SplitMix64's mixer, the top 24 bits scaled to [0, 1). The counter is read on the
# device, so a dropout layer costs no device-to-host read per step.
_SPLITMIX64 = cupy.ElementwiseKernel(
    "raw C counter, uint64 seed_term", "float32 out",
    """
    unsigned long long z = (unsigned long long)i + seed_term
        + (unsigned long long)counter[0] * 0xD1B54A32D192ED03ull;
    z ^= z >> 30;
    z *= 0xBF58476D1CE4E5B9ull;
    z ^= z >> 27;
    z *= 0x94D049BB133111EBull;
    z ^= z >> 31;
    out = (float)(z >> 40) * (1.0f / 16777216.0f);
    """, "hiapi_splitmix64_uniform")


@register("random_uniform")
def random_uniform(out, like, counter, seed):
    seed_term = np.uint64(seed * 0x9E3779B97F4A7C15 % 2**64)
    _SPLITMIX64(cupy.asarray(counter).reshape(1), seed_term, out)
