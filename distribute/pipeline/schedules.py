"""The order in which one pipeline stage runs its micro-batches' forward ("F") and backward
("B") passes within one global batch (the seed notes: GPipe, Huang et al. 2019; 1F1B,
PipeDream-Flush, Narayanan et al. 2021).

With K stages and M micro-batches, each stage is idle for a *bubble* of (K - 1) / (M + K - 1)
of the step when every stage's forward takes the same time and its backward too. The stages
here do not: a stage's backward re-runs its forward (re-materialisation, ``stage.py``) and the
last stage has no forward of its own (its backward starts from the loss), so its forward work
comes only in the backward phase. ``predicted_bubble`` simulates the schedule with each
stage's (forward, backward) times: for 1F1B with equal forward-plus-backward per stage it is
still (K - 1) / (M + K - 1) (the last stage alternates from its first micro-batch); GPipe's is
larger, since its last stage idles through the forward phase and then does all its work.
They differ in memory: GPipe runs all M forwards before any backward, so a stage holds M
micro-batches' activations; 1F1B starts the backward of micro-batch m as soon as it can, so
stage k holds at most K - k of them (warm-up forwards), which bounds memory by K instead of M.
"""


def gpipe(stage, stages, micro_batches):
    """All forwards, then all backwards in reverse order."""
    return [("F", m) for m in range(micro_batches)] + \
        [("B", m) for m in reversed(range(micro_batches))]


def one_f_one_b(stage, stages, micro_batches):
    """K - k - 1 warm-up forwards, then one forward and one backward alternately, then the
    remaining backwards (the last stage alternates from the start)."""
    warmup = min(stages - stage - 1, micro_batches)
    order = [("F", m) for m in range(warmup)]
    forward, backward = warmup, 0
    while backward < micro_batches:
        if forward < micro_batches:
            order.append(("F", forward))
            forward += 1
        order.append(("B", backward))
        backward += 1
    return order


SCHEDULES = {"gpipe": gpipe, "1f1b": one_f_one_b}


def get(name):
    if name not in SCHEDULES:
        raise ValueError(f"Strategy: schedule must be one of {sorted(SCHEDULES)}, got {name!r}")
    return SCHEDULES[name]


def ideal_bubble(stages, micro_batches):
    """The idle fraction of each stage with equal stage times: (K - 1) / (M + K - 1)."""
    return (stages - 1) / (micro_batches + stages - 1)


def predicted_bubble(stages, micro_batches, schedule, actions):
    """Each stage's idle fraction of the step when stage k's forward and backward take
    ``actions[k] = (forward, backward)`` (any unit), communication free (``simulate``)."""
    step, busy = simulate(stages, micro_batches, schedule, [f for f, _ in actions],
                          [b for _, b in actions])
    return [1.0 - b / step if step else 0.0 for b in busy]


def bubble_and_imbalance(idle):
    """Split each stage's idle fraction of one step (or of the same steps) into the bubble,
    the bottleneck stage's idle (the least, as it is the stage busy longest), and each stage's
    imbalance, the rest (``stats.py`` says why). Returns (bubble, [imbalance per stage])."""
    bubble = float(min(idle))
    return bubble, [float(i) - bubble for i in idle]


def peak_in_flight(order):
    """The most micro-batches whose forward ran and backward has not: activations held."""
    live = peak = 0
    for kind, _ in order:
        live += 1 if kind == "F" else -1
        peak = max(peak, live)
    return peak


def simulate(stages, micro_batches, schedule, forward_times, backward_times):
    """Step time of the schedule when stage k's forward takes ``forward_times[k]`` and its
    backward ``backward_times[k]`` (seconds), communication free: each action starts when its
    stage is free and its input has arrived. Returns (step time, per-stage busy time)."""
    orders = [schedule(k, stages, micro_batches) for k in range(stages)]
    done = {}                        # (stage, kind, m) -> finish time
    free = [0.0] * stages
    position = [0] * stages
    remaining = sum(map(len, orders))
    while remaining:
        progressed = False
        for k in range(stages):
            if position[k] == len(orders[k]):
                continue
            kind, m = orders[k][position[k]]
            if kind == "F":
                ready = 0.0 if k == 0 else done.get((k - 1, "F", m))
            else:
                ready = done.get((k, "F", m)) if k == stages - 1 else done.get((k + 1, "B", m))
            if ready is None:
                continue
            start = max(free[k], ready)
            free[k] = start + (forward_times[k] if kind == "F" else backward_times[k])
            done[(k, kind, m)] = free[k]
            position[k] += 1
            remaining -= 1
            progressed = True
        if not progressed:
            raise RuntimeError("pipeline schedule deadlocks")
    busy = [micro_batches * (f + b) for f, b in zip(forward_times, backward_times)]
    return max(free), busy
