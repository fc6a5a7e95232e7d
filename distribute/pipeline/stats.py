"""What a pipeline stage measures about its steps, and how its idle time splits into the
pipeline's bubble and the stages' imbalance.

Each step, every stage times the part of it spent computing (``busy``: not blocked on a
neighbour's activation or gradient, on its own sends being taken, or in the step's closing
collective, where the stages meet so the step ends together) and the step's wall time. The
closing collective also hands every stage the others' busy seconds, so each rank knows its
whole pipeline's.

Why two numbers and not one: (K-1)/(M+K-1) is the idle fraction of *every* stage when the stages
take equal time. With unequal stages GPipe's step is (M+K-1) * t_max (``t_max`` the slowest
stage's time per micro-batch) and 1F1B's the same in steady state, so

- the **bubble** is the idle fraction of the *bottleneck* stage (the one busy longest): the
  fill and drain of the pipeline, what (K-1)/(M+K-1) predicts;
- the **imbalance** of stage k is the rest of its idle time: ``(busy_max - busy_k) / wall``, the
  time it waits each micro-batch for the slower stage (``(t_max - t_k) * M`` of the step).

A stage's idle fraction is exactly its bubble plus its imbalance; their means over the stages
add up the same way. A split balances the stages to drive the imbalance to zero; the bubble
only more micro-batches shrink.
"""
import numpy as np


class PipelineStats:
    """Measured on this stage since the last reset: steps, their wall time, this stage's busy
    time and every stage's (its pipeline's, this replica's), the most micro-batches held between
    their forward and backward and their bytes, and the seconds the stage's own forward and
    backward actions took (the backward with its gradient accumulation) over
    ``micro_batches`` micro-batches. ``action_seconds`` is the mean (forward, backward) per
    micro-batch, what ``schedules.simulate`` needs to predict the bubble of these stage times.
    The per-step lists keep each step's fractions: on a shared machine a neighbour's load
    lands in a few steps, and their median says what the schedule does without it."""

    def __init__(self):
        self.waiting = None             # how the stage waits: "spin" or "yield" (waiting.py)
        self.stage = 0                  # this rank's stage: its entry in ``stage_busy``
        self.reset()

    def reset(self):
        """Forget what was measured (after a warm-up, say)."""
        self.steps, self.wall, self.peak_in_flight = 0, 0.0, 0
        self.stage_busy = None          # per stage: busy seconds summed over the steps
        self.peak_held_bytes = 0        # activations entering the stage, kept for backward
        self.forward_seconds = self.backward_seconds = 0.0
        self.forward_cpu_seconds = self.backward_cpu_seconds = 0.0    # this thread's CPU
        self.micro_batches = 0
        self.step_idle, self.step_bubble, self.step_imbalance = [], [], []
        self.receive_waits = []         # per step: seconds blocked on each receive, in order

    def record(self, wall, stage_busy, in_flight, receive_waits=()):
        """One step: its wall time on this rank, each stage's busy seconds in it and this
        stage's wait on each of its receives."""
        stage_busy = np.asarray(stage_busy, np.float64)
        self.steps += 1
        self.wall += wall
        self.stage_busy = stage_busy.copy() if self.stage_busy is None else \
            self.stage_busy + stage_busy
        idle, bubble, imbalance = _fractions(wall, stage_busy, self.stage)
        self.step_idle.append(idle)
        self.step_bubble.append(bubble)
        self.step_imbalance.append(imbalance)
        self.peak_in_flight = max(self.peak_in_flight, in_flight)
        self.receive_waits.append(list(receive_waits))

    @property
    def steady_receive_wait(self):
        """The median wait on a receive other than a step's first and last: in steady state a
        stage that waits at all waits about this per micro-batch (message latency and the
        neighbour's host overhead between its actions); the first and last receives are the
        fill and the drain."""
        middle = [w for waits in self.receive_waits for w in waits[1:-1]]
        return float(np.median(middle)) if middle else None

    @property
    def busy(self):
        return float(self.stage_busy[self.stage]) if self.steps else 0.0

    @property
    def idle(self):
        """This stage's idle fraction of its steps: ``bubble + imbalance``."""
        return _fractions(self.wall, self.stage_busy, self.stage)[0] if self.steps \
            else float("nan")

    @property
    def bubble(self):
        """The bottleneck stage's idle fraction: the pipeline's fill and drain."""
        return _fractions(self.wall, self.stage_busy, self.stage)[1] if self.steps \
            else float("nan")

    @property
    def imbalance(self):
        """This stage's idle fraction beyond the bubble: waiting for a slower stage."""
        return _fractions(self.wall, self.stage_busy, self.stage)[2] if self.steps \
            else float("nan")

    @property
    def imbalance_per_stage(self):
        if not self.steps:
            return None
        return [float(x) for x in (self.stage_busy.max() - self.stage_busy) / self.wall]

    @property
    def bottleneck(self):
        """The stage busy longest (None before a step)."""
        return int(np.argmax(self.stage_busy)) if self.steps else None

    @property
    def action_seconds(self):
        if not self.micro_batches:
            return None
        return (self.forward_seconds / self.micro_batches,
                self.backward_seconds / self.micro_batches)

    @property
    def action_cpu_seconds(self):
        """As ``action_seconds`` in this thread's CPU time: what the actions cost with a core
        of their own (ranks sharing cores stretch wall time, not CPU time; kernels running
        on more threads than this one make it an underestimate)."""
        if not self.micro_batches:
            return None
        return (self.forward_cpu_seconds / self.micro_batches,
                self.backward_cpu_seconds / self.micro_batches)


def _fractions(wall, stage_busy, stage):
    """(idle of ``stage``, bubble, imbalance of ``stage``) as fractions of ``wall``."""
    if not wall:
        return float("nan"), float("nan"), float("nan")
    most = float(np.max(stage_busy))
    own = float(stage_busy[stage])
    return 1.0 - own / wall, 1.0 - most / wall, (most - own) / wall
