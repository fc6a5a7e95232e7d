"""Adapting the thread count to the load while ``fit`` runs.

Why: the thread budget counts the CPUs this process may use, not how busy they are. With other
processes on the cores, a GEMM split over two threads waits for whichever thread the scheduler
left out, and one thread per pool is several times faster: measured on 2 cores at load ~16, the
MLP step took 66 ms with 2 threads and 10 ms with 1; on the same machine when quiet, 2 threads
won (4.3 vs 5.4 ms). No static number is right for both, so fit measures: it times a few steps
with each candidate count (the budget, halves of it, 1), keeps the fastest, and measures again
later: less often while the answer stays the same (but at least every 10 s: with one thread
chosen, the end of the load changes no step time), at once when the step time doubles or
halves (the load changed). A count whose first two timed steps are both twice as slow as the
current choice is dropped from that probe: probing must not cost more than it can win.

How it measures, and why so. On a busy machine the scheduler gives this process time slices,
so step times are bimodal: with 2 busy processes on 2 cores the MNIST MLP step took either
~3.7 or ~8 ms with either thread count, depending on whether a slice ended inside it. Blocks of
4 steps per candidate, compared by their medians, then picked whichever block fell in the
luckier phase (the choice flipped between 1 and 2 on 5 of 12 probes), a reference taken from
a lucky median made the next ordinary steps look like a doubling (a new probe every ~20
steps), and a single slow step dropped a candidate. So the candidates take short turns within
a probe (3 turns each of a settling step and 2 timed ones, so the same phases hit all of
them; turns of single steps misjudged a quiet machine: a 2-thread step right after a 1-thread
one was slower, and 1 thread won the probes while it ran 4 ms/step against 3), they are
compared by the mean of their steps without the slowest one (what an epoch costs is the mean;
one hiccup is not the load), another count replaces the choice only when 15 % faster (two
counts within the noise flipped, and each flip restarted the probing interval), and the drift
test compares the mean of the last 16 steps with that figure.

It only runs when hiapi chose the budget: a count fixed by the user (``HIAPI_NUM_THREADS``,
``hiapi.config.set_num_threads``, ``OMP_NUM_THREADS``) is kept. It runs in seeded scripts too
(``hiapi.utils.set_random_seed``, what almost every Keras script calls): the thread count
changes no bit of the results, because every matrix product is cut in bands fixed by its
shape, each a single-threaded BLAS call (``backends/gemm_bands.py``; OpenBLAS's own threads would
split it differently for 1 and 2 threads, and a seeded run's weights would follow the timing).

This floor knows no callback and no kernel: ``hiapi.callbacks.thread_tuning.ThreadTuning`` calls
the tuner from fit's hooks and switches the fixed bands on when it runs.
"""
import time
from collections import deque
from statistics import fmean      # of a handful of floats: no numpy array per step

from hiapi.runtime import threads

TURNS = 3                 # turns per candidate in one probe (odd: the choice ends it)
TURN_STEPS = 2            # timed steps per turn, after one settling step
FIRST_INTERVAL = 50       # steps between probes; doubles while the choice holds
MAX_INTERVAL = 800
MAX_SECONDS = 10.0        # and at least this often: a load that went away changes no step time
RECENT = 16               # steps whose mean is compared with the probe's
DRIFT = 2.0               # a recent mean this many times slower or faster: probe again
ABANDON = 2.0             # a probed count whose steps are this many times slower is dropped
MARGIN = 0.15              # another count replaces the choice only when this much faster


def typical(times):
    """A candidate's step time: the mean without the slowest step (one hiccup is not the
    load; the mean, not the median, because time slices make step times bimodal)."""
    if len(times) > 2:
        times = sorted(times)[:-1]
    return fmean(times)


def candidates(budget):
    """Thread counts worth trying: the budget, its halves, and 1."""
    counts, n = [], budget
    while n > 1:
        counts.append(n)
        n //= 2
    return counts + [1]


class ThreadTuner:
    """Times train steps with each candidate thread count and keeps the fastest: call
    ``train_begin`` when training starts, ``batch_begin`` and ``batch_end`` around each train
    step, ``train_end`` when it ends."""

    def __init__(self):
        self.choice = None
        self.probes = 0
        self.active = False

    def train_begin(self):
        """Start tuning (True), or, where the count is not hiapi's to choose, go back to the
        full budget whatever an earlier fit chose (False)."""
        self.active = threads.adaptive()
        if not self.active:
            threads.use(threads.budget().threads)
            return False
        self.options = candidates(threads.budget().threads)
        self.choice = self.choice if self.choice in self.options else self.options[0]
        self.interval, self.countdown = FIRST_INTERVAL, 1     # step 0 compiles: not timed
        self.plan, self.times, self.reference = [], {}, None
        self.probed_at = time.perf_counter()
        self.recent = deque(maxlen=RECENT)
        return True

    def batch_begin(self):
        if self.active:
            self._start = time.perf_counter()

    def batch_end(self):
        if not self.active:
            return
        elapsed = time.perf_counter() - self._start
        if self.plan:
            self._record(elapsed)
            return
        self.countdown -= 1
        self.recent.append(elapsed)
        overdue = time.perf_counter() - self.probed_at > MAX_SECONDS
        if self.countdown <= 0 or overdue or self._drifted():
            self._start_probe()

    def _drifted(self):
        if self.reference is None or len(self.recent) < RECENT:
            return False
        ratio = fmean(self.recent) / self.reference
        return ratio > DRIFT or ratio < 1 / DRIFT

    def _start_probe(self):
        """TURNS turns per candidate, each a settling step then TURN_STEPS timed ones, the
        candidates alternating turn by turn in the order, reversed, the order...; the current
        choice goes last, so the steps after the probe continue with it."""
        order = [n for n in self.options if n != self.choice] + [self.choice]
        turns = [order if t % 2 == 0 else order[::-1] for t in range(TURNS)]
        self.plan = [(n, timed) for turn in turns for n in turn
                     for timed in [False] + [True] * TURN_STEPS]
        self.times = {n: [] for n in order}
        threads.use(self.plan[0][0])

    def _record(self, elapsed):
        count, timed = self.plan.pop(0)
        if timed:
            self.times[count].append(elapsed)
            if count != self.choice and self._too_slow(self.times[count]):
                self.plan = [(n, t) for n, t in self.plan if n != count]
        if self.plan:
            if self.plan[0][0] != count:
                threads.use(self.plan[0][0])
            return
        best = min((n for n in self.times if self.times[n]), key=lambda n: typical(self.times[n]))
        mine = self.times[self.choice]
        if mine and typical(self.times[best]) > (1 - MARGIN) * typical(mine):
            best = self.choice          # within the noise: keep it, and let the interval grow
        self.interval = min(2 * self.interval, MAX_INTERVAL) if best == self.choice else \
            FIRST_INTERVAL
        self.choice, self.countdown = best, self.interval
        self.probed_at = time.perf_counter()
        self.reference = fmean(self.times[best])     # all of them: the steps to come
        self.recent.clear()
        self.probes += 1
        threads.use(best)

    def _too_slow(self, times):
        """Two timed steps, both ABANDON times the current choice's (this probe's, else the
        last probe's figure)."""
        mine = self.times[self.choice]
        level = typical(mine) if mine else self.reference
        return len(times) >= 2 and level is not None and min(times) > ABANDON * level

    def train_end(self):
        if self.active:
            threads.use(self.choice)


_shared = None


def shared():
    """The tuner fit uses: one per process, so a second fit starts from the count the first
    one found."""
    global _shared
    if _shared is None:
        _shared = ThreadTuner()
    return _shared
