"""Adapting the thread count to the load, step by step, for as long as the process runs.

Why: the thread budget counts the CPUs this process may use, not how busy they are. With other
processes on the cores, a GEMM split over two threads waits for whichever thread the scheduler
left out, and one thread per pool is several times faster: measured on 2 cores at load ~16, the
MLP step took 66 ms with 2 threads and 10 ms with 1; on the same machine when quiet, 2 threads
won (4.3 vs 5.4 ms). No static number is right for both, so the compiled steps measure: each
one (``StepTuner``, one per compiled step: its graph, input shapes and backend) times its own
calls with each candidate count (the budget, halves of it, 1) and keeps the fastest.

What it learnt stays as long as the step does, not one ``fit`` call: a later ``fit``,
``evaluate``, ``predict`` or ``train_on_batch`` of the same model starts from it, and a step
seen for the first time starts from the count the last probe anywhere in the process chose,
and probes first once its own time is a hundred times what that probe should cost (the
process's first step probes at once: nothing measured the load yet).
Probing is paid for only when something changed, measured by what the step itself costs (the
time inside the step, not the trainer's work around it): at once when the mean of its last 16
calls is twice or half what it was after the last probe (the load changed), and otherwise
only rarely (with one thread chosen the end of the load changes no step time): after
``GAP_SECONDS`` of the step's own time, doubling while the choice holds, and never before the
steps since the last probe took 100 times what that probe cost (1 %). Issue #29 measured the
old rule (the probing restarted with every ``fit``, and re-probed every 50-800 steps): six
``fit(epochs=1)`` of 20 steps ran at 24 ms/step against 16 with the count fixed.

How it measures, and why so. On a busy machine the scheduler gives this process time slices,
so step times are bimodal: with 2 busy processes on 2 cores the MNIST MLP step took either
~3.7 or ~8 ms with either thread count, depending on whether a slice ended inside it. So the
candidates take short turns within a probe (up to 3 turns each of a settling step and 2 timed
ones, so the same phases hit all of them; a 2-thread step right after a 1-thread one was
slower), they are compared by the mean of their steps without the slowest one (what an epoch
costs is the mean; one hiccup is not the load), and another count replaces the choice only
when 15 % faster. A probe ends after the first turn when its answer is already clear: every
step of each count within 20 % of each other (no time slice ended inside them) and the fastest
count's slowest step 25 % faster than every other count's fastest; on a quiet 2-core machine
that is 3 steps on one thread instead of 9. A count whose first two timed steps are both twice
as slow as the current choice is dropped from that probe, and so is the current choice when
its two are both twice as slow as another count's (then, with one count left, the probe
ends).

It only runs when hiapi chose the budget: a count fixed by the user (``HIAPI_NUM_THREADS``,
``hiapi.config.set_num_threads``, ``OMP_NUM_THREADS``) is kept (``refresh`` reads that again;
``fit``, ``evaluate`` and ``predict`` call it when they start). It runs in seeded scripts too:
the thread count changes no bit of the results, because while it adapts a matrix product whose
bits OpenBLAS would change with the count (it cuts some ``k`` differently on 1 and 2 threads,
and a seeded run's weights would follow the timing) runs on one thread in the blocks of ``k``
that BLAS's threaded driver sums, so as to get its bits, or is cut along ``k`` into pieces
whose bits do not change, or runs in bands fixed by its shape, each a single-threaded BLAS call
(``backends/gemm_bands.py`` registers that with ``when_adapting``). This floor knows no step
and no kernel: ``hiapi.graph.Function`` calls ``begin`` and ``end`` around the steps it runs.
"""
import math
import time
from collections import deque
from statistics import fmean      # of a handful of floats: no numpy array per step

from hiapi.runtime import threads

TURNS = 3                 # turns per candidate in one probe (odd: the choice ends it)
TURN_STEPS = 2            # timed steps per turn, after one settling step
RECENT = 16               # calls whose mean is compared with the one after the last probe
DRIFT = 2.0               # a recent mean this many times slower or faster: probe again
ABANDON = 2.0             # a probed count whose steps are this many times slower is dropped
MARGIN = 0.15             # another count replaces the choice only when this much faster
STEADY = 1.2              # a count's timed steps within this ratio: no time slice in them
CLEAR = 1.25              # the fastest this much faster on every step: the probe may end
GAP_SECONDS = 10.0        # step time between scheduled probes; doubles while the choice holds
MAX_GAP_SECONDS = 160.0
PROBE_SHARE = 0.01        # a scheduled probe costs at most this share of the time since the last
DRIFT_SHARE = 0.10        # and one on a change of step time this share (a flickering load)
FIRST_PROBE_SECONDS = 1.0  # a step started from another's count probes after this much at most


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


_adapting = None
_on_adapting = []
_last_choice = None
_probing_seconds = 0.0      # what every probe in this process cost (``probing_seconds``)


def refresh():
    """Read again whether steps adapt their thread count (``threads.adaptive``: a budget
    hiapi chose, one process); where they do not, the pools go back to the full budget,
    whatever a step chose before. Returns whether they adapt."""
    global _adapting
    _adapting = threads.adaptive()
    if _adapting:
        for function in _on_adapting:
            function()
    else:
        threads.use(threads.budget().threads)
    return _adapting


def adapting():
    """Whether steps adapt their thread count (as last read by ``refresh``)."""
    return refresh() if _adapting is None else _adapting


def when_adapting(function):
    """Call ``function()`` before any step adapts (now, if they already do): how the fixed
    GEMM bands switch on, from a floor above this one."""
    _on_adapting.append(function)
    if _adapting:
        function()


def probing_seconds():
    """Seconds the probes of every step in this process cost over running each probe's
    chosen count all along: what the tuning cost (``benchmarks/fit_patterns.py`` reports it
    as a share of the run)."""
    return _probing_seconds


def last_choice():
    """The count the last probe in this process chose (None before any)."""
    return _last_choice


class StepTuner:
    """What one compiled step learnt about thread counts; call ``begin()`` before each call of
    the step and ``end(start)`` after it, with what ``begin`` returned."""

    def __init__(self):
        self.options = candidates(threads.budget().threads)
        # A count another step's probe chose measured the load already: start from it and
        # probe when that costs PROBE_SHARE of this step's own time (``_settle``); only the
        # process's first step probes at once (each new step probed at its second call: 17
        # steps, 8 on one thread, inside a 20-batch ``predict``, 9 % of its time, issue #29)
        self.inherited = _last_choice in self.options
        self.choice = _last_choice if self.inherited else self.options[0]
        self.countdown = 1                  # the first call compiles and warms up: not timed
        self.gap = GAP_SECONDS
        self.plan, self.times = [], {}
        self.reference, self.recent, self.total = None, deque(maxlen=RECENT), 0.0
        self.since, self.cost, self.probes = 0.0, 0.0, 0

    def begin(self):
        """Switch the pools to this call's count; returns the start time."""
        threads.use(self.plan[0][0] if self.plan else self.choice)
        return time.perf_counter()

    def end(self, start):
        elapsed = time.perf_counter() - start
        if self.plan:
            self._record(elapsed)
            return
        if self.countdown > 0:
            self.countdown -= 1
            if self.countdown == 0 and not self.inherited:
                self._start_probe()
            return
        self.since += elapsed
        recent = self.recent                # the last RECENT step times, and their sum
        if len(recent) == RECENT:
            self.total -= recent[0]
        recent.append(elapsed)
        self.total += elapsed
        if self.reference is None:
            if len(recent) == RECENT:
                self._settle()
        elif self.since >= self.due or (self.since >= self.drift_from and
                                        not self.low <= self.total <= self.high):
            self._start_probe()

    def _settle(self):
        """The reference (the mean of the first RECENT calls since the last probe) and the
        thresholds the calls from now on are compared with, so that a call in steady state
        adds and compares only (the mean of the last 16 at every call was 0.3 of the tuner's
        0.7 us a call).

        Drift: the sum of the last RECENT times twice or half the reference's, once the time
        since is 1/DRIFT_SHARE times what the last probe cost. The scheduled probe: after
        ``gap`` of step time and 1/PROBE_SHARE times what the last probe cost. A step that
        started from another's choice and never probed: as soon as its own time is
        1/PROBE_SHARE times what a probe is estimated to cost (every step at another count
        one step's time more), or FIRST_PROBE_SECONDS, whichever is first (another step's
        count may not suit this one: a heavier step, say, after a single-sample ``predict``;
        this bounds how long it runs with it)."""
        self.total = math.fsum(self.recent)     # exact again: the running sum rounds
        self.reference = self.total / RECENT
        if not self.probes:
            self.cost = self.reference * (len(self.options) - 1) * TURNS * (1 + TURN_STEPS)
            self.due = min(self.cost / PROBE_SHARE, FIRST_PROBE_SECONDS)
        else:
            self.due = max(self.gap, self.cost / PROBE_SHARE)
        self.drift_from = self.cost / DRIFT_SHARE
        self.low, self.high = self.total / DRIFT, self.total * DRIFT

    def _restart(self):
        """Measure the reference again from the next call on."""
        self.since, self.reference, self.total = 0.0, None, 0.0
        self.recent.clear()

    def _start_probe(self):
        """Turns of a settling step then TURN_STEPS timed ones, the candidates alternating
        turn by turn in the order, reversed, the order...; the current choice goes last, so
        the calls after the probe continue with it."""
        if not refresh():               # the count was fixed since: look again later
            self._restart()
            return
        order = [n for n in self.options if n != self.choice] + [self.choice]
        turns = [order if t % 2 == 0 else order[::-1] for t in range(TURNS)]
        self.plan = [(n, timed) for turn in turns for n in turn
                     for timed in [False] + [True] * TURN_STEPS]
        self.times = {n: [] for n in order}
        self.spent, self.probed = 0.0, 0

    def _record(self, elapsed):
        count, timed = self.plan.pop(0)
        self.spent, self.probed = self.spent + elapsed, self.probed + 1
        if timed:
            self.times[count].append(elapsed)
            if self._too_slow(count):
                self.plan = [(n, t) for n, t in self.plan if n != count]
                if count == self.choice and len({n for n, _ in self.plan}) < 2:
                    self.plan = []          # the one count left, timed already, is the answer
        if self.plan and not (timed and count == self.choice and self._clear()):
            return
        self._finish()

    def _clear(self):
        """After a whole turn: every count's steps steady, the fastest's all CLEAR times faster
        than every other count's."""
        times = list(self.times.values())
        if any(len(t) < TURN_STEPS for t in times) or \
                any(max(t) > STEADY * min(t) for t in times):
            return False
        fastest = min(times, key=max)
        return all(CLEAR * max(fastest) <= min(t) for t in times if t is not fastest)

    def _finish(self):
        global _last_choice, _probing_seconds
        self.plan = []
        best = min((n for n in self.times if self.times[n]), key=lambda n: typical(self.times[n]))
        mine = self.times[self.choice]
        if mine and typical(self.times[best]) > (1 - MARGIN) * typical(mine):
            best = self.choice          # within the noise: keep it, and let the gap grow
        # what the probe cost over running the chosen count all along
        self.cost = max(0.0, self.spent - self.probed * typical(self.times[best]))
        _probing_seconds += self.cost
        self.gap = min(2 * self.gap, MAX_GAP_SECONDS) if best == self.choice else GAP_SECONDS
        self.choice = _last_choice = best
        self.probes += 1
        self._restart()
        threads.use(best)

    def _too_slow(self, count):
        """Two timed steps, both ABANDON times the level to beat: for another count, the
        current choice's (this probe's, else the figure after the last probe); for the
        current choice, the fastest other count's in this probe. The current choice too: on
        a flickering load its steps on two threads took 100-160 ms against 40 on one, but
        not steadily enough to end the probe after a turn, so the probe ran all three."""
        times = self.times[count]
        if count == self.choice:
            others = [typical(t) for n, t in self.times.items()
                      if n != count and len(t) >= TURN_STEPS]
            level = min(others, default=None)
        else:
            mine = self.times[self.choice]
            level = typical(mine) if mine else self.reference
        return len(times) >= 2 and level is not None and min(times) > ABANDON * level
