"""Turning the user's arrays into checked, batched feeds for the compiled steps."""
import math
import weakref

import numpy as np

from hiapi.models.disk_array import DiskArray, on_disk


def as_list(data, what, lazy=False):
    """``data`` as a list of numpy arrays (one per model input or output); with ``lazy``, a
    ``np.memmap`` or h5py dataset becomes a ``DiskArray``, read batch by batch."""
    if data is None:
        return []
    items = list(data) if isinstance(data, (list, tuple)) else [data]
    out = []
    for item in items:
        if lazy and on_disk(item):
            out.append(DiskArray(item))
            continue
        array = np.asarray(item)
        if array.dtype == object:
            raise TypeError(f"{what}: expected numeric arrays, got an object array "
                            f"(ragged or mixed data?)")
        out.append(array)
    return out


def by_name(data, names, what, kind):
    """Keras's dict form: ``{"image": x, "stats": s}`` as a list in the model's ``kind``
    (input or output) order. Anything else is returned as given."""
    if not isinstance(data, dict):
        return data
    if names is None:
        raise ValueError(f"{what}: a dict needs a model with named {kind}s (a functional "
                         f"hiapi.Model); pass the arrays as a list in {kind} order instead")
    unknown = [key for key in data if key not in names]
    if unknown:
        raise ValueError(f"{what}: key(s) {unknown} name no {kind} of the model; its {kind}s "
                         f"are {names}")
    missing = [name for name in names if name not in data]
    if missing:
        raise ValueError(f"{what}: no data for the model's {kind}(s) {missing}; its {kind}s "
                         f"are {names}")
    return [data[name] for name in names]


def unpack_batch(item, what, targets=True):
    """One batch from a generator or PyDataset as (x, y, sample_weight), as Keras reads it: a
    tuple is (x,), (x, y) or (x, y, sample_weight); anything else is x alone (predict)."""
    if isinstance(item, tuple):
        if not 1 <= len(item) <= 3:
            raise ValueError(f"{what}: a batch must be a tuple (x,), (x, y) or (x, y, "
                             f"sample_weight), got a tuple of {len(item)} elements")
        x, y, sample_weight = item + (None,) * (3 - len(item))
    elif targets:
        raise ValueError(f"{what}: a batch must be a tuple (x, y) or (x, y, sample_weight), "
                         f"got {type(item).__name__}")
    else:
        x, y, sample_weight = item, None, None
    if targets and y is None:
        raise ValueError(f"{what}: a batch has no targets: yield (x, y) or (x, y, "
                         f"sample_weight) tuples")
    return x, y, sample_weight


def num_samples(xs, ys):
    sizes = {len(a) for a in xs + ys if a.ndim}
    if len(sizes) > 1:
        raise ValueError("x and y must have the same number of samples; got sizes "
                         f"x: {[len(a) for a in xs]}, y: {[len(a) for a in ys]}")
    if not sizes:
        raise ValueError("no data: x is empty or scalar")
    return sizes.pop()


def check_finite(arrays, what):
    for index, array in enumerate(arrays):     # arrays on disk are not read whole for it
        if isinstance(array, np.ndarray) and array.dtype.kind == "f" and \
                not _FINITE.finite(array):
            bad = int(np.size(array) - np.isfinite(array).sum())
            raise ValueError(f"{what}[{index}] contains {bad} NaN or infinite values; training "
                             f"on them would give a NaN loss")


def all_finite(array):
    """Whether a float array holds no NaN or infinity, at the cost of one read of it.

    ``np.isfinite(array).all()`` writes a boolean array as large as the data and reads it
    again: 25 ms for MNIST's 60000x784 float32 training set, once per ``fit`` call (1.5 % of
    an epoch of the small MLP). A matrix-vector product with ones is one multi-threaded BLAS
    read (6.5 ms): a NaN or infinity in a row makes that row's sum non-finite. A finite row
    whose sum overflows reads as non-finite too, so a non-finite sum is confirmed exactly."""
    if array.dtype in (np.float32, np.float64) and array.size and array.flags.c_contiguous:
        rows = array.reshape(len(array), -1) if array.ndim > 1 else array.reshape(-1, 1)
        with np.errstate(over="ignore", invalid="ignore"):
            sums = rows @ np.ones(rows.shape[1], array.dtype)
        if np.isfinite(sums).all():
            return True
    return bool(np.isfinite(array).all())


class _FiniteArrays:
    """The arrays ``check_finite`` found finite, so that ``fit`` called again on the same data
    (a loop of ``fit(epochs=1)``, a notebook) does not read it all again: one read of MNIST's
    training set is 13-22 ms, 1-2 % of an epoch of the README's MLP, on every call. An array
    is known by its identity and its memory (address, shape, strides, type): a new array, or
    one resized, is checked again. What this cannot see is the same array written in place
    between calls: a NaN written into it then reaches the step, whose loss check stops ``fit``
    at that batch (FloatingPointError, "the loss became nan"), so it is not silent, only
    reported later and less exactly."""

    def __init__(self):
        self.known = {}         # id -> (weak reference, memory key) of an array found finite

    def finite(self, array):
        """Whether ``array`` holds no NaN or infinity (``all_finite``, unless known)."""
        ident, interface = id(array), array.__array_interface__
        memory = interface["data"][0], array.shape, array.strides, array.dtype.str
        entry = self.known.get(ident)
        if entry is not None and entry[0]() is array and entry[1] == memory:
            return True
        if not all_finite(array):
            return False
        self.known[ident] = (weakref.ref(array, lambda _: self.known.pop(ident, None)), memory)
        return True


_FINITE = _FiniteArrays()


def split_validation(arrays, fraction):
    """Keras's ``validation_split``: the *last* ``fraction`` of the samples, before shuffling.
    ``arrays`` is (xs, ys, sample weights), each a list of arrays."""
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"validation_split must be in (0, 1), got {fraction!r}")
    n = num_samples(arrays[0], arrays[1])
    split_at = int(math.floor(n * (1.0 - fraction)))
    if split_at == 0 or split_at == n:
        raise ValueError(f"validation_split={fraction} leaves no samples on one side of the "
                         f"split with {n} samples")
    return tuple([a[:split_at] for a in part] for part in arrays), \
        tuple([a[split_at:] for a in part] for part in arrays)


def check_shuffle(shuffle):
    """``fit``'s ``shuffle``: True, False or Keras's ``"batch"``."""
    if shuffle == "batch" or isinstance(shuffle, (bool, np.bool_)):
        return shuffle if shuffle == "batch" else bool(shuffle)
    raise ValueError(f"fit: shuffle must be True, False or 'batch', got {shuffle!r}")


def chunk_starts(n, block, rng):
    """``shuffle="batch"``: the starts of ``n`` samples' chunks of ``block`` rows, the full
    chunks in a random order and a partial one, if any, last (where a strategy's workers can
    leave out a tail smaller than their number). A chunk's rows stay in their order: a batch
    (a worker's part of one) is then a slice of the arrays (a view, nothing gathered), where a
    row shuffle copies every batch row by row from all over the data (``BatchGatherer``).

    What Keras documents ("shuffles in batch-sized chunks") and tf.keras 2 did; Keras 3's
    loaders instead keep the batches in order and permute the rows inside each, which changes
    no gradient but the order its sum is taken in."""
    full = n // block
    return [int(k) * block for k in rng.permutation(full)] + ([full * block] if n % block
                                                              else [])


def worker_batches(n, batch_size, workers, worker, shuffle, rng):
    """One epoch's batches for worker ``worker`` of ``workers`` (1 and 0 in one process), as
    (indices, its number of samples, the global batch's): every worker draws the same order
    from the same ``rng`` and takes its ``np.array_split`` share of every global batch of
    ``batch_size * workers`` samples. Indices are slices (views, nothing gathered) unless
    the epoch permutes all samples (``shuffle=True``). A last global batch with fewer samples
    than workers is left out (every worker needs one); the partial batch is last in every
    order."""
    block = batch_size * workers
    starts = chunk_starts(n, block, rng) if shuffle == "batch" else range(0, n, block)
    order = rng.permutation(n) if shuffle and shuffle != "batch" else None
    out = []
    for start in starts:
        size = min(block, n - start)
        if size < workers:
            break
        low, high = _share(size, workers, worker)
        mine = slice(start + low, start + high) if order is None else \
            order[start + low:start + high]
        out.append((mine, high - low, size))
    return out


def _share(length, workers, worker):
    """``np.array_split(range(length), workers)[worker]`` as (start, stop)."""
    base, extra = divmod(length, workers)
    start = worker * base + min(worker, extra)
    return start, start + base + (worker < extra)


class BatchGatherer:
    """Batches of ``arrays`` by index. Shuffled batches are gathered with ``np.take`` into
    buffers reused from step to step: fancy indexing allocates a new array per batch and input
    and ran 2-4x slower (128 MNIST rows: 100 us against 190-450 us), a tenth of a small model's
    step. A batch is only valid until the next one is taken. Slices stay views (no copy)."""

    def __init__(self, arrays):
        self.arrays = list(arrays)
        self.buffers = [None] * len(self.arrays)

    def take(self, index):
        if isinstance(index, slice):           # views; an array on disk reads the rows
            return [np.asarray(a[index]) for a in self.arrays]
        n, batch = len(index), []
        for k, array in enumerate(self.arrays):
            buffer = self.buffers[k]
            if buffer is None or len(buffer) < n:
                buffer = self.buffers[k] = np.empty((n,) + array.shape[1:], array.dtype)
            # every index is in range (a permutation): "clip" skips numpy's buffered check;
            # the method, not np.take, skips numpy's Python-level dispatch
            batch.append(array.take(index, axis=0, out=buffer if len(buffer) == n else
                                    buffer[:n], mode="clip"))
        return batch


def check_sample_weights(weights, n):
    for w in weights:
        if w.ndim != 1:
            raise ValueError(f"sample_weight must be one weight per sample (shape (n,)), got "
                             f"shape {w.shape}")
        if len(w) != n:
            raise ValueError(f"sample_weight has {len(w)} entries but x has {n} samples; it "
                             f"needs one weight per sample (length {n})")


def class_weight_to_sample_weights(class_weight, y, num_classes):
    """Per-sample weights from ``{class: weight}`` for integer or one-hot labels. As in Keras 3
    a class missing from ``class_weight`` weighs 1.0; a key that is not a class of the output
    (``0 .. num_classes - 1``; ``num_classes`` None when the output does not say) is an error
    rather than a weight that silently applies to nothing."""
    if not isinstance(class_weight, dict):
        raise TypeError(f"class_weight must be a dict {{class index: weight}}, got "
                        f"{type(class_weight).__name__}")
    classes = f"0..{num_classes - 1}" if num_classes else "non-negative integers"
    for key, weight in class_weight.items():
        if isinstance(key, bool) or not isinstance(key, (int, np.integer)) or key < 0 or (
                num_classes and key >= num_classes):
            raise ValueError(f"class_weight: key {key!r} is not a class of the model's output; "
                             f"the classes are {classes}")
        if not np.isfinite(weight):
            raise ValueError(f"class_weight: the weight of class {key} is {weight}")
    labels = np.asarray(y)
    if labels.ndim > 1 and labels.shape[-1] > 1:
        labels = labels.argmax(axis=-1)
    labels = np.round(labels.reshape(len(labels), -1)[:, 0]).astype(np.int64)
    weights = np.ones(len(labels), np.float32)
    for cls, weight in class_weight.items():
        weights[labels == int(cls)] = weight
    return weights


def check_batch_size(batch_size):
    if batch_size is None:
        return 32
    if not isinstance(batch_size, (int, np.integer)) or batch_size <= 0:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    return int(batch_size)
