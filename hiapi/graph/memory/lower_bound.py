"""What the lower bound (the peak of simultaneously live bytes) is made of: the step where it
is reached and the live values there, by kind.

After recomputation this is what no further checkpointing of the same kind can remove: for a
chain of convolutions, one segment's recomputed activations, the checkpoints of the segments
still to come, and the gradient working set of one layer (its output gradient, its input
gradient and the input its kernel gradient reads). ``memory_report()`` prints the line, so a
user can see whether a smaller budget could help (more checkpoints) or not (the working set).
"""
from collections import namedtuple

import numpy as np

from hiapi.graph.schedule import topological_order

Part = namedtuple("Part", "kind count nbytes")

KINDS = ("recomputed activations", "kept activations", "gradients and other temporaries",
         "values kept to the end")


def peak_parts(executable):
    """(step index, [Part per kind]) at the step where the planned values' live bytes peak
    (values only: kernel scratch is a row of its own); None without a plan."""
    plan = executable.plan
    if plan is None or not plan.offsets:
        return None
    order = executable.order
    owners = [v for v in plan.offsets if v not in plan.shares]
    events = np.zeros(len(order) + 2, np.int64)
    for v in owners:
        events[plan.intervals[v].start] += plan.nbytes[v]
        events[plan.intervals[v].end + 1] -= plan.nbytes[v]
    step = int(np.argmax(np.cumsum(events)))
    forward_count = getattr(executable, "forward_outputs", len(executable.output_slots))
    forward = set(topological_order([order[i] for i in
                                     executable.output_slots[:forward_count]]))
    parts = {kind: [0, 0] for kind in KINDS}
    for v in owners:
        interval = plan.intervals[v]
        if interval.start <= step <= interval.end:
            part = parts[_kind(v, interval, len(order), forward)]
            part[0] += 1
            part[1] += plan.nbytes[v]
    return step, [Part(kind, n, b) for kind, (n, b) in parts.items() if n]


def _kind(var, interval, steps, forward):
    if interval.end >= steps:
        return KINDS[3]
    if var.recompute:
        return KINDS[0]
    return KINDS[1] if var in forward else KINDS[2]


def describe(executable):
    """One report line: the peak's step and op, and what is live there by kind."""
    found = peak_parts(executable)
    if found is None:
        return None
    step, parts = found
    what = "; ".join(f"{p.count} {p.kind} {p.nbytes / 2**20:.2f} MiB" for p in parts)
    scratch = getattr(executable, "scratch", {}).get(executable.order[step], 0)
    if scratch:                                   # the op's own planned temporaries
        what += f"; its kernel scratch {scratch / 2**20:.2f} MiB"
    return f"  lower bound is at step {step} ({executable.order[step].op.name}): {what}"
