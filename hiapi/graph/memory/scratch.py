"""Kernel scratch in the memory plan: a kernel that needs a temporary (im2col columns, a fused
program's chunk slots) declares its bytes for the step's shapes (``Backend.scratch_bytes``),
and each such request becomes a block of the arena live for that one step, as TensorFlow Lite
and XLA plan temporaries. So the arena, ``memory_report()`` and ``memory_budget`` count every
byte the kernels use, and a step allocates nothing.

*Why after the activations, not among them:* the activation plan stays exactly what it was
(recomputation choices compare the same numbers), and a step's scratch is short-lived, so it
mostly lands in gaps the activations leave at that step; what does not fit extends the arena,
and that extension is what the report shows as scratch.
"""
import heapq

import numpy as np

from hiapi.graph.memory.planner import _aligned, _best_gap


def scratch_requests(order, specs, backend):
    """Var -> workspace bytes its kernel needs (only Vars whose kernel needs some)."""
    requests = {}
    for var in order:
        op = var.op
        if op.is_source or op.view_of is not None:
            continue
        nbytes = backend.scratch_bytes(op, [specs[var]] + [specs[i] for i in var.inputs])
        if nbytes > 0:
            requests[var] = _aligned(nbytes)
    return requests


def place_scratch(plan, order, requests):
    """Give each request an arena offset free during its step; grows ``plan.arena_bytes``
    where one does not fit, raises ``plan.lower_bound`` to the peak of live values plus the
    step's scratch and adds the requests to ``plan.upper_bound``.

    One op runs per step, so requests never meet each other: each avoids only the values alive
    at its step, found by a sweep over the steps (a 10,000-convolution chain plans in linear
    time, not quadratic)."""
    index = {var: i for i, var in enumerate(order)}
    owners = sorted(plan.offsets, key=lambda v: plan.intervals[v].start)
    plan.activation_bytes = plan.arena_bytes
    alive, ending, next_owner = {}, [], 0
    for var in sorted(requests, key=index.__getitem__):
        step, size = index[var], requests[var]
        while next_owner < len(owners) and plan.intervals[owners[next_owner]].start <= step:
            owner = owners[next_owner]
            alive[next_owner] = (plan.offsets[owner], plan.offsets[owner] + plan.nbytes[owner])
            heapq.heappush(ending, (plan.intervals[owner].end, next_owner))
            next_owner += 1
        while ending and ending[0][0] < step:
            del alive[heapq.heappop(ending)[1]]
        blocks = np.array(list(alive.values()), np.int64).reshape(-1, 2)
        offset = _best_gap(blocks[:, 0], blocks[:, 1], size)
        plan.scratch[var] = offset
        plan.arena_bytes = max(plan.arena_bytes, offset + size)
    plan.scratch_bytes = plan.arena_bytes - plan.activation_bytes
    plan.largest_scratch = max(requests.values(), default=0)
    plan.lower_bound = max(plan.lower_bound, _peak_with_scratch(plan, owners, index, requests))
    plan.upper_bound += sum(requests.values())       # every request its own buffer too
    return plan


def _peak_with_scratch(plan, owners, index, requests):
    """Largest sum of live values' bytes plus the scratch of the step running then."""
    if not requests:
        return 0
    steps = max([plan.intervals[v].end for v in owners] + list(index.values())) + 2
    live = np.zeros(steps, np.int64)
    for v in owners:
        live[plan.intervals[v].start] += plan.nbytes[v]
        live[plan.intervals[v].end + 1] -= plan.nbytes[v]
    live = np.cumsum(live)
    for var, size in requests.items():
        live[index[var]] += size
    return int(live.max())
