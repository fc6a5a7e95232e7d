"""Gathering the next shuffled batch on a background thread while the current step runs.

Why: a shuffled batch is copied row by row from all over the training data (``np.take`` into
reused buffers, ``data.BatchGatherer``). For MNIST's 128 rows of 3 KB that is 70-80 us with the
caches cold, about 3 % of the small MLP's step, and it ran on the training thread between two
steps while the second core sat idle in the step's single-threaded parts. ``np.take`` releases
the GIL, so a second thread can copy batch k+1 while step k runs, as tf.data's prefetch and
torch's DataLoader do; the training thread then only picks the finished batch up.

Same batches, same order: batch k+1 is gathered from the same indices into another buffer set
than batch k's (step k reads one while the next is written into another). As without
prefetching, a batch is valid until the next one is asked for: only then is the batch after
that started into its buffers.

At idle priority, and why: a helper thread at normal priority lowered ``fit``'s overhead
*figure* (the time outside the steps) but made whole epochs slower on this project's 2-core
machine: same-process A/B of the MNIST MLP (alternating epochs), 1.031x on numpy and 1.088x on
numba. The copy competed with the step's two BLAS threads for the same two cores, and a BLAS
thread waiting for its core holds up the whole product; ``nice 19`` did not help (1.03x). So
the helper runs under Linux's ``SCHED_IDLE`` policy: the kernel gives it a core only when no
other thread wants one, which on a training machine means the gaps between kernels (the
training thread's Python work, BLAS's threads asleep) and the whole second core while the
thread tuner runs the step on one thread. The same A/B then gave 0.92x on numba and 0.95-0.96x on
numpy (whole epochs faster; 0.99x and 1.02x with 1 or 2 busy processes beside it), and
``benchmarks/fit_overhead.py`` an overhead figure of 6.6 % and 4.5 % against 8.3 % and 5.7 %
inline. The hand-off is what remains: waking the helper costs the training thread 25-35 us
on this VM.

A helper at idle priority may not get a core at all while other processes keep both busy, so
the training thread never waits on it for long (``_result``): it waits up to a few times
what gathering the epoch's first batch took (``PATIENCE``), then gathers the batch itself and
gathers inline for the rest of the epoch. The helper may still be copying the batch it was
late with; it writes only into its own two buffer sets, never into the training thread's two
(batch k lives in ``own[k % 2]`` or ``helpers[k % 2]``), and works its jobs one at a time, so
no buffer is written while a step reads it.

When it runs (``wanted``): shuffled batches only (in-order batches are views, nothing is
copied), when this process may use at least two cores (``cores()``, the thread budget, asked
again before every batch: one means one core, e.g. a rank of several on a node or
``HIAPI_NUM_THREADS=1``; the thread tuner's choice of one thread for the step does not stop
it, since that leaves a core idle, which is where an idle-priority helper pays), when a batch
is large enough that the hand-off between threads (tens of microseconds) is worth it
(``MIN_BYTES``), and on Linux (``IDLE_POLICY``; elsewhere ``HIAPI_PREFETCH=1`` switches it
on at normal priority, ``HIAPI_PREFETCH=0`` off everywhere; ``ENABLED`` is what the
benchmark flips). Where Linux refuses the idle class (a container's seccomp filter), the
helper ends at once and the process gathers inline from then on, unless ``HIAPI_PREFETCH=1``.

Lifetime: one thread per epoch, started by the epoch's generator and joined when the generator
ends, including when it is closed early (``EarlyStopping``, an exception or Ctrl-C in the step:
``fit`` closes the epoch's generator), so no thread writes a buffer after its epoch.
"""
import os
import queue
import threading
import time

from hiapi.runtime import environment, threads

# Linux's idle scheduling class (None where the platform has none)
IDLE_POLICY = getattr(os, "SCHED_IDLE", None) if hasattr(os, "sched_setscheduler") else None


def enabled_by_default(choice):
    """``HIAPI_PREFETCH``'s choice (True, False, or None when unset: on where the helper can run
    at idle priority)."""
    return IDLE_POLICY is not None if choice is None else choice


_CHOICE = environment.prefetch()
ENABLED = enabled_by_default(_CHOICE)
# asked for with HIAPI_PREFETCH=1: then also at normal priority where idle is refused
FORCED = _CHOICE is True
idle_refused = False        # set when this process could not give the helper idle priority
THREAD_NAME = "hiapi-batch-prefetch"
# how long the training thread waits for the helper: this many times the first batch's inline
# gather, plus a floor for the hand-off and the helper's wake-up (tens of microseconds)
PATIENCE = 4
PATIENCE_FLOOR_SECONDS = 0.002
# Below this the copy saves less than the hand-off costs the training thread (waking the helper,
# 25-35 us, and now and then waiting for it): MNIST epochs, helper against inline, 784-128-10
# MLP with Adam: 1.08x at batch 32 (100 KB a batch), 1.05x at 64, 1.02x at 128 (400 KB);
# 784-512-10 with SGD at 128: 0.92-0.98x (a longer step leaves the helper more gaps).
MIN_BYTES = 256 * 1024


def wanted(arrays, indices):
    """Whether prefetching pays for batches of ``arrays`` at ``indices`` (index arrays or
    slices, one per batch)."""
    if not ENABLED or idle_refused and not FORCED or len(indices) < 2 or \
            isinstance(indices[0], slice):
        return False
    row_bytes = sum(a.itemsize * (a.size // len(a)) for a in arrays if len(a))
    return row_bytes * len(indices[0]) >= MIN_BYTES and cores() >= 2


def cores():
    """The cores this process may use now (``hiapi.threads.budget``)."""
    return threads.budget().threads


def batches(own, helpers, indices):
    """Yield batch k of ``indices`` for every k, batch k+1 gathered on a helper thread while
    batch k is in use. ``own`` and ``helpers`` are two ``BatchGatherer`` each over the same
    arrays: batch k is gathered into ``own[k % 2]`` on the training thread (the first batch,
    and every batch the helper was late with) or ``helpers[k % 2]`` on the helper."""
    jobs, results = queue.SimpleQueue(), queue.SimpleQueue()
    worker = threading.Thread(target=_work, args=(jobs, results, not FORCED), daemon=True,
                              name=THREAD_NAME)
    worker.start()
    try:
        started = time.perf_counter()
        batch = own[0].take(indices[0])
        patience = PATIENCE * (time.perf_counter() - started) + PATIENCE_FLOOR_SECONDS
        prefetching = True
        for k in range(len(indices)):
            following = k + 1 < len(indices)
            # asked at every step: the budget may shrink (data-loading workers started)
            job = None
            if following and prefetching and cores() >= 2:
                job = _Job(helpers[(k + 1) % 2].take, indices[k + 1])
                jobs.put(job)
            yield batch
            if job is not None:
                batch = _result(results, patience)
                if batch is None:           # late: no core to spare, so none this epoch
                    job.dropped, prefetching = True, False
            if following and (job is None or batch is None):
                batch = own[(k + 1) % 2].take(indices[k + 1])
    finally:
        jobs.put(None)
        worker.join()          # the gather in flight, if any, finishes first


class _Job:
    """One batch for the helper to gather; ``dropped`` once the training thread gave up on it
    (the helper then skips it, or finishes its copy into its own buffers unread)."""
    __slots__ = ("take", "index", "dropped")

    def __init__(self, take, index):
        self.take, self.index, self.dropped = take, index, False


def _result(results, patience):
    """The batch the helper gathered (its error raised here), or None when it has not come
    within ``patience`` seconds (or the helper ended, see ``_work``)."""
    try:
        batch, error = results.get(timeout=patience)
    except queue.Empty:
        return None
    if error is not None:
        raise error
    return batch


def _work(jobs, results, idle_only):
    """The helper: gathers the jobs it is given, at idle priority; where that is refused (a
    container's seccomp filter, say) and prefetching was not asked for by name, it hands back
    an empty result at once and ends, so the training thread gathers inline from then on (at
    normal priority the helper made epochs slower, see the module docstring)."""
    global idle_refused
    if not run_when_idle() and idle_only:
        idle_refused = True
        results.put((None, None))
        return
    while (job := jobs.get()) is not None:
        if job.dropped:
            continue
        try:
            results.put((job.take(job.index), None))
        except BaseException as error:        # handed to the training thread, raised there
            results.put((None, error))


def run_when_idle():
    """Put the calling thread in Linux's idle scheduling class (it then runs only on a core
    no other thread wants); True when done. Elsewhere, or when refused, it stays as it is."""
    if IDLE_POLICY is None:
        return False
    try:
        os.sched_setscheduler(threading.get_native_id(), IDLE_POLICY, os.sched_param(0))
    except OSError:
        return False
    return True
