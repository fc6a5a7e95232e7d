"""Gathering the coming shuffled batches on a background thread while the steps run.

Why: a shuffled batch is copied row by row from all over the training data (``np.take`` into
reused buffers, ``data.BatchGatherer``). For MNIST's 128 rows of 3 KB that is 70-110 us with
the caches cold, 3-5 % of the README MLP's step, and it ran on the training thread between two
steps while the second core sat idle in the step's single-threaded parts. ``np.take`` releases
the GIL, so a second thread can copy the coming batches while the steps run, as tf.data's
prefetch and torch's DataLoader do; the training thread then only picks a finished batch up.

Same batches, same order: batch k is gathered from the same indices, into a buffer set of its
own. As without prefetching, a batch is valid until the next one is asked for: only then may
its buffers be written again.

At idle priority, and why: a helper thread at normal priority lowered ``fit``'s overhead
*figure* (the time outside the steps) but made whole epochs slower on this project's 2-core
machine: same-process A/B of the MNIST MLP (alternating epochs), 1.031x on numpy and 1.088x on
numba. The copy competed with the step's two BLAS threads for the same two cores, and a BLAS
thread waiting for its core holds up the whole product; ``nice 19`` did not help (1.03x). So
the helper runs under Linux's ``SCHED_IDLE`` policy: the kernel gives it a core only when no
other thread wants one, which on a training machine means the gaps between kernels (the
training thread's Python work, BLAS's threads asleep) and the whole second core while the
thread tuner runs the step on one thread.

A ring, and no wake-ups: the first version handed the helper one batch per step through a
queue. Waking a sleeping thread costs the waker 25-35 us on this VM (a futex wake that has to
interrupt the other virtual CPU), and the training thread paid it at every step: ``fit``'s
overhead figure stayed at 6.6 % (numba) and 4.5 % (numpy). Now the helper gathers ahead into a
ring of buffer sets (``ring_size``: 8 MB of batches, 3 to 8 of them) as far as the batches in
use allow, and naps on a timer while the ring is full, for the time the training thread takes
to free half of it. The two threads share counters read without a lock (``_Shared``): picking
up a ready batch costs the training thread an attribute read. A batch the helper has not
finished is gathered by the training thread itself, at once, into its own two buffer sets
(the helper skips it): it never waits, so prefetching never costs more than the copy it
replaces. ``benchmarks/fit_overhead.py`` on the README's MLP: 2.3 % (numpy) and 2.9 % (numba)
against 5.8 % and 6.8 % inline; whole epochs 0.94x and 0.91x of inline.

Under load it steps aside: a helper at idle priority gets no core while other processes keep
both busy, and worse, it may be preempted while it holds the GIL, which then stalls the
training thread until the scheduler gives the idle thread a turn (same-process A/B with two
busy processes: 1.31x the epoch time while it kept trying). So once the training thread has
gathered more batches itself than ``LATE_ALLOWANCE`` plus one in ``LATE_EVERY`` of those
asked for, the helper stops for the epoch; the next epoch tries again. With one and two busy
processes the A/B then read 1.00x and 0.97x of inline.

When it runs (``wanted``): shuffled batches only (in-order batches are views, nothing is
copied), when this process may use at least two cores (``cores()``, the thread budget, asked
again by the helper before every batch, which stops when it falls to one: one means one core,
e.g. a rank of several on a node or ``HIAPI_NUM_THREADS=1``; the thread tuner's choice of one
thread for the step does not stop it, since that leaves a core idle, which is where an
idle-priority helper pays), when a batch is large enough to be worth the helper's traffic
(``MIN_BYTES``), and on Linux (``IDLE_POLICY``; elsewhere ``HIAPI_PREFETCH=1`` switches it on
at normal priority, ``HIAPI_PREFETCH=0`` off everywhere; ``ENABLED`` is what the benchmark
flips). Where Linux refuses the idle class (a container's seccomp filter), the helper ends at
once and the process gathers inline from then on, unless ``HIAPI_PREFETCH=1``.

Lifetime: one thread per epoch, started by the epoch's generator and told to stop when the
generator ends, including when it is closed early (``EarlyStopping``, an exception or Ctrl-C in
the step: ``fit`` closes the epoch's generator); it ends after the copy it is in, if any. The
training thread waits for that ``JOIN_SECONDS`` at most, and never on a lock the helper may
hold: under load the scheduler gives an idle-priority thread a core only now and then, and
``fit`` of the 784-1024-1024-10 MLP with two busy processes spent 0.6-1.5 s at every epoch's
end waiting for its helper (the join, and the ``Event`` the helper napped on, whose lock the
helper held when it lost its core), more than its 20 steps took. A helper still running then
writes only its own ring, which ``busy`` reports until it ends: the next epoch gathers into a
new one, so no thread writes a buffer in use.
"""
import os
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
# Below this the copy saves less than the helper costs (its GIL hand-offs with the training
# thread): MNIST epochs, helper against inline, 784-128-10 MLP with Adam: 1.045x at batch 32
# (100 KB a batch), 1.03x at 64 (with the queue before the ring: 1.08x, 1.05x, 1.02x at 128);
# 784-512-10 with SGD at 128 (400 KB): 0.91-0.97x.
MIN_BYTES = 256 * 1024
# the helper gathers up to this many bytes of batches ahead, in 3 to MAX_RING buffer sets
RING_BYTES = 8 * 1024 * 1024
MAX_RING = 8
# the helper stops for the epoch once the training thread gathered more batches itself than
# LATE_ALLOWANCE plus one in LATE_EVERY of those asked for (it gets no core: other processes)
LATE_ALLOWANCE, LATE_EVERY = 3, 8
# the helper's nap while the ring is full, at least and at most
MIN_NAP_SECONDS, MAX_NAP_SECONDS = 0.0002, 0.05
# how long the end of an epoch waits for its helper to end (it is told to stop first)
JOIN_SECONDS = 0.005
_helpers: dict[int, threading.Thread] = {}     # id of a ring -> the helper that fills it


def wanted(arrays, indices):
    """Whether prefetching pays for batches of ``arrays`` at ``indices`` (index arrays or
    slices, one per batch)."""
    if not ENABLED or idle_refused and not FORCED or len(indices) < 2 or \
            isinstance(indices[0], slice):
        return False
    return batch_bytes(arrays, indices) >= MIN_BYTES and cores() >= 2


def batch_bytes(arrays, indices):
    """The bytes of one batch of ``arrays`` gathered at ``indices[0]``."""
    return sum(a.itemsize * (a.size // len(a)) for a in arrays if len(a)) * len(indices[0])


def ring_size(arrays, indices):
    """How many buffer sets the helper fills ahead: ``RING_BYTES`` worth, 3 to ``MAX_RING``."""
    return max(3, min(MAX_RING, RING_BYTES // max(batch_bytes(arrays, indices), 1)))


def cores():
    """The cores this process may use now (``hiapi.threads.budget``)."""
    return threads.budget().threads


def busy(ring):
    """Whether a helper from an earlier epoch may still write into ``ring`` (see Lifetime in
    the module docstring): then the caller gathers into another."""
    for key in [key for key, thread in _helpers.items() if not thread.is_alive()]:
        del _helpers[key]
    return id(ring) in _helpers


def batches(own, ring, indices):
    """Yield batch k of ``indices`` for every k, the batches after the first gathered ahead on
    a helper thread. ``own`` is two ``BatchGatherer`` of the training thread, ``ring`` the
    helper's (three or more, over the same arrays): batch k is in ``ring[k % len(ring)]``, or
    in ``own[k % 2]`` when the training thread gathered it (the first batch, and any batch the
    helper had not finished when it was asked for: the training thread never waits)."""
    shared = _Shared(len(ring))
    batch = own[0].take(indices[0])
    worker = threading.Thread(target=_work, args=(ring, indices, shared, not FORCED),
                              daemon=True, name=THREAD_NAME)
    worker.start()
    late = 0                                    # batches the helper was late with
    try:
        yield batch
        for k in range(1, len(indices)):
            shared.released = k                 # batch k-1 is done with: its slot is free
            if shared.ready > k:
                yield shared.batches[k % len(ring)]
            else:                               # not there yet: cheaper to copy than to wait
                shared.claimed, late = k, late + 1
                if late > LATE_ALLOWANCE + k // LATE_EVERY:     # no core to spare for it
                    shared.stop()
                yield own[k % 2].take(indices[k])
    finally:
        shared.stop()
        worker.join(JOIN_SECONDS)   # the gather in flight, if any, finishes first
        if worker.is_alive():       # no core for it now: it ends on its own, in its ring
            _helpers[id(ring)] = worker


class _Shared:
    """What the two threads tell each other: plain attributes, each written by one thread
    (``ready`` by the helper: the batches before it are in the ring or were gathered by the
    training thread; ``released`` and ``claimed`` by the training thread) and read without a
    lock. So handing over a batch costs the training thread an attribute read: no lock, no
    wake-up. ``stop()`` at the end of the epoch, or when the helper falls behind, sets
    ``stopping`` and releases ``wake``, the lock the helper naps on while the ring is full:
    releasing a lock never waits, where setting an ``Event`` takes a lock the helper holds
    for a moment around each nap, and may hold for long when it loses its core."""
    __slots__ = ("batches", "ready", "released", "claimed", "stopping", "wake")

    def __init__(self, size):
        self.batches = [None] * size
        self.ready = self.released = 1      # the first batch is gathered inline
        self.claimed = 0                    # the last batch the training thread gathered
        self.stopping = False
        self.wake = threading.Lock()
        self.wake.acquire()                 # released once, by stop()

    def stop(self):
        """Tell the helper to stop (the training thread only; at once, whatever it holds)."""
        if not self.stopping:
            self.stopping = True
            self.wake.release()

    def nap(self, seconds):
        """The helper's nap: True when woken by ``stop``."""
        return self.wake.acquire(timeout=seconds)


def _work(ring, indices, shared, idle_only):
    """The helper: gathers batch 1, 2, ... into the ring while the batches it would overwrite
    are done with, at idle priority, skipping those the training thread gathered itself. With
    the ring full it naps for about the time the training thread takes to free half of it (the
    pace so far), so that the training thread never has to wake it (see the module docstring).
    Where idle priority is refused (a container's seccomp filter, say) and prefetching was not
    asked for by name, it stops at once (at normal priority the helper made epochs slower); it
    stops too when the budget falls to one core (data-loading workers started) and on an error,
    which the training thread then meets, if it is not the helper's own, gathering that batch
    itself."""
    global idle_refused
    if not run_when_idle() and idle_only:
        idle_refused = True
        return
    started, k, size = time.perf_counter(), 1, len(ring)
    while k < len(indices) and not shared.stopping and cores() >= 2:
        released = shared.released
        if k >= released + size:                # its slot still holds a batch in use
            pace = (time.perf_counter() - started) / released
            if shared.nap(min(max(pace * (size // 2), MIN_NAP_SECONDS), MAX_NAP_SECONDS)):
                return
            continue
        k = max(k, shared.claimed + 1)          # the training thread took those itself
        if k >= len(indices) or k >= released + size:
            continue
        try:
            shared.batches[k % size] = ring[k % size].take(indices[k])
        except Exception:                     # noqa: BLE001 -- the training thread will see it
            return
        k += 1
        shared.ready = k


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
