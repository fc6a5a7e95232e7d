"""Gathering the next shuffled batch on a background thread while the current step runs.

Why: a shuffled batch is copied row by row from all over the training data (``np.take`` into
reused buffers, ``data.BatchGatherer``). For MNIST's 128 rows of 3 KB that is 70-80 us with the
caches cold, about 3 % of the small MLP's step, and it ran on the training thread between two
steps while the second core sat idle in the step's single-threaded parts. ``np.take`` releases
the GIL, so a second thread can copy batch k+1 while step k runs, as tf.data's prefetch and
torch's DataLoader do; the training thread then only picks the finished batch up.

Same batches, same order: batch k+1 is gathered from the same indices into the other of two
buffer sets (step k reads one while the next is written into the other). As without
prefetching, a batch is valid until the next one is asked for: only then is the batch after
that started into its buffers.

When it runs (``wanted``): shuffled batches only (in-order batches are views, nothing is
copied), when this process may run at least two threads now (``threads.active_threads()``,
asked again before every batch: one means one core, e.g. a rank of several on a node,
``HIAPI_NUM_THREADS=1``, or the thread tuner backing off under load, where a thread that must
wait for a core costs more than it saves) and when a batch is large enough that the hand-off
between threads (tens of microseconds) is worth it (``MIN_BYTES``); and only when asked for
(``HIAPI_PREFETCH=1``, ``hiapi.config.prefetch``; ``ENABLED`` is what the benchmark flips).

Why off by default: it lowers ``fit``'s overhead *figure* (the time outside the steps), but on
this project's 2-core machine, quiet, it made whole epochs slower: same-process A/B of the
MNIST MLP (alternating epochs), 1.031x on numpy and 1.088x on numba, and ``fit`` against
``fit`` with it off in ``benchmarks/fit_overhead.py`` 1.064x and 1.035x. The copy moves off
the training thread but competes with the step's two BLAS threads for the same two cores and
the memory bus, so the steps grow by more than the gather took. A machine whose budget leaves
a core free (or slow storage behind the arrays) is where it can pay; measure there.

Lifetime: one thread per epoch, started by the epoch's generator and joined when the generator
ends, including when it is closed early (``EarlyStopping``, an exception or Ctrl-C in the step:
``fit`` closes the epoch's generator), so no thread writes a buffer after its epoch.
"""
import queue
import threading

from hiapi.runtime import environment, threads

ENABLED = environment.prefetch()
# Below this a batch is copied inline in a few microseconds (2 us for 32 rows of 64 B, 8 us for
# 16 MNIST rows, 49 KB), less than what the hand-off risks: a round trip to the thread took
# 35-45 us when no step ran in between to hide it (128 MNIST rows: 47 us inline).
MIN_BYTES = 64 * 1024


def wanted(arrays, indices):
    """Whether prefetching pays for batches of ``arrays`` at ``indices`` (index arrays or
    slices, one per batch)."""
    if not ENABLED or len(indices) < 2 or isinstance(indices[0], slice):
        return False
    row_bytes = sum(a.itemsize * (a.size // len(a)) for a in arrays if len(a))
    return row_bytes * len(indices[0]) >= MIN_BYTES and threads.active_threads() >= 2


def batches(gatherers, indices):
    """Yield ``gatherers[k % 2].take(indices[k])`` for every k, batch k+1 gathered on a
    background thread while batch k is in use. ``gatherers`` are two ``BatchGatherer`` over
    the same arrays (their own buffers)."""
    jobs, results = queue.SimpleQueue(), queue.SimpleQueue()
    worker = threading.Thread(target=_work, args=(jobs, results), daemon=True,
                              name="hiapi-batch-prefetch")
    worker.start()
    try:
        batch = gatherers[0].take(indices[0])
        for k in range(len(indices)):
            following = k + 1 < len(indices)
            # asked at every step: the thread tuner may move to one thread mid-epoch
            ahead = following and threads.active_threads() >= 2
            if ahead:
                jobs.put((gatherers[(k + 1) % 2].take, indices[k + 1]))
            yield batch
            if ahead:
                batch, error = results.get()
                if error is not None:
                    raise error
            elif following:
                batch = gatherers[(k + 1) % 2].take(indices[k + 1])
    finally:
        jobs.put(None)
        worker.join()          # the gather in flight, if any, finishes first


def _work(jobs, results):
    while True:
        job = jobs.get()
        if job is None:
            return
        take, index = job
        try:
            results.put((take(index), None))
        except BaseException as error:        # handed to the training thread, raised there
            results.put((None, error))
