"""Helper threads that run a numba kernel's parts, waiting for work by spinning a short while
before they sleep.

Why: a batch-32 forward of a small model takes ~70 us on one core. Splitting it over two
threads only pays if handing half to the other thread costs much less than the half: waking a
sleeping thread (a futex wake) cost the waker 25-35 us on the 2-core VM, and a numba workqueue
launch ~150 us. OpenMP runtimes (PyTorch's included) keep their threads spinning after each
parallel region for that reason: torch's batch-32 forward took 61-71 us with them spinning and
122 us with ``OMP_WAIT_POLICY=passive``. Here a helper spins only for ``HIAPI_SPIN_US`` (300 us)
after its last job, so a loop of batches keeps it awake and between ``predict`` calls it
sleeps, and it spins on ``sched_yield``, so another runnable process on its core gets the core
at each turn.

The helper never takes the GIL while it serves: its whole loop is one numba ``nogil`` call
(``serve``) that waits on a flag, runs ``job(descriptor, part)`` (a numba function that reads
its arrays from an int64 descriptor of addresses and sizes) and sets another flag. A first
version handed Python callables to the helper: each job then waited for the GIL, whose hand-over
is the same futex wake-up, and an empty job cost 58 us. Only falling asleep and waking go
through Python (an ``Event``). Each side writes its flag and reads the other's with a full
fence between (``_store_then_load``), so neither can miss the other's wake-up.

``SpinWorkers(job, serve).run(descriptor, parts)``: part 0 on the calling thread, parts 1.. on
helpers; returns when all are done. One job at a time: a call made while another runs (another
thread's predict) runs every part on the calling thread.
"""
import os
import threading
import time

import numpy as np
from llvmlite import ir
from numba import carray, njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from hiapi.runtime import environment

# int64 slots of a helper's flags, 64 bytes apart (each side writes its own cache lines)
POSTED, DONE, HELPER_ASLEEP, CALLER_ASLEEP, SEEN = 0, 8, 16, 24, 32
DESCRIPTOR, DESCRIPTOR_SIZE = 1, 2          # the job's descriptor: its address and length
FLAG_SLOTS = 40


@intrinsic
def fence(typingctx):
    """A sequentially consistent fence: no load or store moves across it (the compiler's
    or the CPU's)."""
    def codegen(context, builder, signature, args):
        builder.fence("seq_cst")
        return context.get_dummy_value()
    return types.void(), codegen


def pointer_at(item):
    """An intrinsic that reads an address (an int64) as a pointer to ``item`` (a numba type),
    for ``numba.carray``: how a job finds the arrays its descriptor names."""
    pointer = types.CPointer(item)

    @intrinsic
    def at(typingctx, address):
        def codegen(context, builder, signature, args):
            return builder.inttoptr(args[0], context.get_value_type(pointer))
        return pointer(types.int64), codegen
    return at


_int64_at = pointer_at(types.int64)


@intrinsic
def sched_yield(typingctx):
    """libc's ``sched_yield()``: the core to another runnable thread, if any."""
    def codegen(context, builder, signature, args):
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.IntType(32), []),
                                            "sched_yield")
        builder.call(fn, [])
        return context.get_dummy_value()
    return types.void(), codegen


@njit(nogil=True, cache=True)
def _spin_until(flags, slot, value, turns):
    """True once ``flags[slot] >= value``; False after ``turns`` yields."""
    for _ in range(turns):
        fence()
        if flags[slot] >= value:
            return True
        sched_yield()
    fence()
    return flags[slot] >= value


@njit(nogil=True, cache=True)
def _store_then_load(flags, store_slot, value, load_slot):
    flags[store_slot] = value
    fence()
    return flags[load_slot]


@njit(nogil=True, cache=True)
def _post(flags, descriptor, sequence):
    """Hands ``descriptor`` over, then the job's number; returns whether the helper sleeps
    (it must then be woken)."""
    flags[DESCRIPTOR] = descriptor.ctypes.data
    flags[DESCRIPTOR_SIZE] = descriptor.size
    fence()
    return _store_then_load(flags, POSTED, sequence, HELPER_ASLEEP)


@njit(nogil=True, cache=True)
def next_job(flags, turns):
    """For a job's serving loop (``serve`` below): the next job's descriptor once one is
    posted, or an empty array when none came for ``turns`` yields."""
    if not _spin_until(flags, POSTED, flags[SEEN] + 1, turns):
        return np.empty(0, np.int64)
    fence()
    flags[SEEN] = flags[POSTED]
    return carray(_int64_at(flags[DESCRIPTOR]), flags[DESCRIPTOR_SIZE])


@njit(nogil=True, cache=True)
def job_done(flags):
    """For a job's serving loop: marks the job done; True when the caller fell asleep waiting
    for it (the loop must then return, for Python to wake it)."""
    fence()
    return _store_then_load(flags, DONE, flags[SEEN], CALLER_ASLEEP) != 0


# A job module writes its helpers' loop over these two with its own job as a global
# (``dense_chain_kernels.serve``): numba caches a function only if the job it calls is a global,
# not an argument; with the job as an argument the loop compiled afresh in every process,
# 0.3-0.5 s inside the first predict.


def _turns(seconds):
    """sched_yield calls in ``seconds`` (0.2-1 us each), measured once."""
    flags = np.zeros(FLAG_SLOTS, np.int64)
    _spin_until(flags, POSTED, 1, 1)             # compiled (or loaded from the cache) first
    start = time.perf_counter()
    _spin_until(flags, POSTED, 1, 2000)
    return int(seconds / max((time.perf_counter() - start) / 2000, 1e-8))


class _Helper:
    def __init__(self, part, serve, turns):
        self.part, self.serve, self.turns = part, serve, turns
        self.flags = np.zeros(FLAG_SLOTS, np.int64)
        self.wake = threading.Event()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._loop, name=f"hiapi-spin-{part}",
                                       daemon=True)
        self.thread.start()

    def post(self, descriptor, sequence):
        if _post(self.flags, descriptor, sequence):
            self.wake.set()

    def wait(self, sequence):
        if _spin_until(self.flags, DONE, sequence, self.turns):
            return
        self.done.clear()
        if _store_then_load(self.flags, CALLER_ASLEEP, 1, DONE) < sequence:
            self.done.wait()
        self.flags[CALLER_ASLEEP] = 0

    def _loop(self):
        while True:
            if self.serve(self.flags, self.part, self.turns):
                self.done.set()                  # the caller fell asleep waiting for this job
                continue
            self.wake.clear()
            if _store_then_load(self.flags, HELPER_ASLEEP, 1, POSTED) <= self.flags[SEEN]:
                self.wake.wait()
            self.flags[HELPER_ASLEEP] = 0


class SpinWorkers:
    """Helpers for one job function: ``job(descriptor, part)``, a numba function that finds
    its arrays and sizes in the int64 array ``descriptor``, which must stay alive and unchanged
    until ``run`` returns; ``serve(flags, part, turns)``, the helpers' loop over it (above)."""

    def __init__(self, job, serve):
        self.job = job
        self.serve = serve
        self._helpers = []
        self._busy = threading.Lock()
        self._sequence = 0
        self._turns = None
        os.register_at_fork(after_in_child=self._forget_helpers)

    def _forget_helpers(self):
        """A forked child has none of the parent's threads: it starts its own."""
        self._helpers, self._sequence = [], 0
        self._busy = threading.Lock()

    def run(self, descriptor, parts):
        if parts <= 1 or not self._busy.acquire(blocking=False):
            for part in range(parts):
                self.job(descriptor, part)
            return
        try:
            helpers = self._helpers[:parts - 1]
            if len(helpers) < parts - 1:
                helpers = self._start(parts - 1)
            self._sequence += 1
            for helper in helpers:
                helper.post(descriptor, self._sequence)
            try:
                self.job(descriptor, 0)
            finally:
                for helper in helpers:
                    helper.wait(self._sequence)
        finally:
            self._busy.release()

    def prepare(self, parts):
        """Start the helpers a later ``run(..., parts)`` needs, now: each loads its loop from
        numba's cache in its own thread as it starts (0.2 s, which the first ``run`` waited
        for before), while the caller goes on."""
        if parts > 1 and len(self._helpers) < parts - 1:
            self._start(parts - 1)

    def _start(self, count):
        if self._turns is None:
            self._turns = _turns(environment.spin_seconds())
        while len(self._helpers) < count:
            self._helpers.append(_Helper(len(self._helpers) + 1, self.serve, self._turns))
        return self._helpers[:count]
