"""Each stage's planned memory, and a split that keeps every stage under ``memory_budget``.

A pipeline's point is a model too big for one process: ``compile(memory_budget=...)`` is then a
per-process budget, and the split must respect it, not only balance time. What a stage plans
is what its process holds for activations, each number from the memory planner for the
stage's own graphs at the largest micro-batch (``StageMemory``):

- its backward program's arena (the stage's forward again, gradients, parameter gradients;
  with a budget, the smallest recomputation plan, ``graph/memory/checkpoints.py``),
- its forward program's arena (every stage but the last),
- the activations entering the stage that its schedule holds between a micro-batch's
  forward and backward (``schedules.peak_in_flight``; the first stage's are slices of the
  batch, not copies).

The budget bounds their sum: the stage's backward is compiled with what the forward arena and
the held activations leave of it (``backward_budget``). Not counted: weights, optimizer slots
and the optimizer update's temporaries, as a single process's ``memory_budget`` does not count
weights and slots either. With ``tensor_parallel`` the stages are planned unsplit, an upper
bound on each part.

The split (``memory_aware_split``): the time-balanced split (``split.balanced_split``) when
every stage fits; otherwise the smallest slowest-stage cost whose stages all fit, by bisection
on that cost, each candidate checked by a search that packs each stage as long as its cost and
memory allow and backs off a boundary only when the later stages cannot then be placed (a
stage holds the activations entering it, so a boundary after a wide layer can make the rest
unplaceable where a shorter earlier stage would not: greedy packing alone reported no split
where one existed). When none exists, the error names the stage that cannot fit.
"""
from dataclasses import dataclass

from hiapi.backends import get_backend
from hiapi.distribute.pipeline import schedules
from hiapi.distribute.pipeline.split import StageCost, balanced_split, output_spec
from hiapi.distribute.pipeline.stage import StagePrograms
from hiapi.graph.function import parse_bytes
from hiapi.graph.memory import checkpoints
from hiapi.graph.memory.planner import plan_memory
from hiapi.graph.memory.scratch import place_scratch, scratch_requests
from hiapi.graph.schedule import execution_order

BISECTION_STEPS = 40


@dataclass(frozen=True)
class StageMemory:
    """Planned bytes of one stage at the largest micro-batch (see the module docstring)."""
    forward: int
    backward: int
    held: int

    @property
    def total(self):
        return self.forward + self.backward + self.held


class StageMemoryPlanner:
    """Plans candidate stages (``memory(k, a, b)``: layers a..b-1 as stage k), cached; every
    rank plans the same candidates, so every rank chooses the same split."""

    def __init__(self, model, layers, input_spec, stages, rows, schedule, micro_batches,
                 targets):
        self.model, self.layers, self.stages, self.rows = model, layers, stages, rows
        self.schedule, self.micro_batches, self.targets = schedule, micro_batches, targets
        recompute = getattr(model, "_recompute", None)
        self.budget = None if recompute in (None, "sublinear") else parse_bytes(recompute)
        self.specs = [input_spec]             # the activation entering each layer
        for layer in layers:
            self.specs.append(output_spec([layer], self.specs[-1]))
        self._plans = {}

    def memory(self, k, a, b):
        """``StageMemory`` of layers a..b-1 as stage k."""
        return self._planned(k, a, b)[0]

    def fits(self, k, a, b):
        """Whether that stage's planned memory fits the budget (always, without one)."""
        return self.budget is None or self._planned(k, a, b)[1]

    def _planned(self, k, a, b):
        key = (k, a, b)
        if key not in self._plans:
            self._plans[key] = self._plan(k, a, b)
        return self._plans[key]

    def held_bytes(self, k, a):
        if k == 0:                             # the batch's own slices
            return 0
        shape, dtype = self.specs[a]
        entering = self.rows * _prod(shape[1:]) * _itemsize(dtype)
        return entering * schedules.peak_in_flight(
            self.schedule(k, self.stages, self.micro_batches))

    def backward_budget(self, k, a, b, forward_bytes):
        """What the forward arena and the held activations leave of the budget."""
        if self.budget is None:
            return None
        return self.budget - forward_bytes - self.held_bytes(k, a)

    def _plan(self, k, a, b):
        last = k == self.stages - 1
        stage = StagePrograms(self.model, self.layers[a:b], k, self.stages, self.specs[a],
                              targets=self.targets if last else None)
        rows = self.rows
        forward = 0 if last else planned_arena(stage.forward, [_rows(self.specs[a], rows)])
        inputs = [_rows(self.specs[a], rows)]
        inputs += [_rows(s, rows) for s in _target_specs(stage)] if last else \
            [_rows(stage.output_spec, rows)]
        shapes = inputs + [()]
        held = self.held_bytes(k, a)
        remaining = self.backward_budget(k, a, b, forward)
        backward, fits = planned_backward(stage.backward, shapes, remaining)
        return StageMemory(forward, backward, held), fits


def planned_arena(function, shapes):
    """The arena ``function`` plans for these input shapes, without recomputation: what its
    ``Executable`` plans (values and kernel scratch)."""
    outputs, updates = function.optimized()
    roots = list(outputs) + [value for _, value in updates]
    order = execution_order(roots)
    specs = checkpoints.infer_specs(order, dict(zip(function.inputs, shapes)))
    plan = plan_memory(order, specs, roots)
    place_scratch(plan, order, scratch_requests(order, specs, get_backend()))
    return plan.arena_bytes


def planned_backward(function, shapes, budget):
    """(arena bytes, fits) of a stage's backward: without a budget, its plan as compiled
    (``function.recompute``: none or "sublinear"); with one, the plan ``checkpoints.choose``
    takes for it, or, when none fits, the smallest achievable and False."""
    if budget is None and function.recompute is None:
        return planned_arena(function, shapes), True
    outputs, updates = function.optimized()
    forward, rest = outputs[:function.forward_outputs], outputs[function.forward_outputs:]
    fed = dict(zip(function.inputs, shapes))
    candidates = checkpoints.evaluate(forward, rest, updates, fed)
    chosen = checkpoints.pick(candidates, forward, fed, budget)
    if chosen is None:
        return min(c.arena_bytes for c in candidates), False
    return chosen.arena_bytes, True


def memory_aware_split(costs, planner):
    """Stage starts: the time-balanced split if every stage fits ``planner.budget``, else the
    smallest slowest-stage cost whose stages all fit (module docstring)."""
    stages, n = planner.stages, len(costs)
    starts = balanced_split(costs, stages)
    if planner.budget is None or _all_fit(planner, starts, n):
        return starts
    cost = StageCost(costs, stages)
    packed = _pack(cost, planner, n, float("inf"))
    if packed is None:
        raise MemoryError(_no_split_message(cost, planner, n))
    low = max(cost(k, a, b) for k, (a, b) in enumerate(zip(starts, starts[1:] + [n])))
    high = max(cost(k, a, b) for k, (a, b) in enumerate(zip(packed, packed[1:] + [n])))
    for _ in range(BISECTION_STEPS):      # the time-balanced optimum is the lower bound
        if high - low <= 1e-9 * high:
            break
        middle = (low + high) / 2
        candidate = _pack(cost, planner, n, middle)
        if candidate is None:
            low = middle
        else:
            high, packed = middle, candidate
    return packed


def check_fits(planner, starts):
    """A split named with ``pipeline_split``: a clear error, on every rank before any stage
    compiles, if a stage cannot fit the budget."""
    n = len(planner.layers)
    names = [layer.name for layer in planner.layers]
    for k, (a, b) in enumerate(zip(starts, starts[1:] + [n])):
        if not planner.fits(k, a, b):
            memory = planner.memory(k, a, b)
            raise MemoryError(
                f"Strategy: stage {k} of pipeline_split (layers {names[a]!r}..{names[b - 1]!r}) "
                f"plans at least {memory.total:,} bytes at {planner.rows} rows per micro-batch "
                f"(forward {memory.forward:,}, backward {memory.backward:,}, held activations "
                f"{memory.held:,}), over memory_budget={planner.budget:,} bytes; move its "
                f"boundaries, or leave pipeline_split out to let the split respect the budget")


def _all_fit(planner, starts, n):
    return all(planner.fits(k, a, b) for k, (a, b) in enumerate(zip(starts, starts[1:] + [n])))


def _pack(cost, planner, n, limit):
    """Stage starts with every stage within ``limit`` and the budget, or None if there are
    none. Each stage takes as many layers as it can first, and fewer only when the rest then
    cannot be placed: a later stage's held activations are those entering it, so where it
    starts matters, and the stages as long as they can be may put a boundary after a wide
    layer while a shorter earlier stage leaves a split that fits. Relies on a stage's cost
    and memory growing with its layers (for a fixed first layer); a start that failed is not
    tried again, so at most stages x layers starts are searched."""
    stages, failed = planner.stages, set()

    def place(k, a):
        """Starts of stages k.. when stage k begins at layer ``a``, or None."""
        if k == stages - 1:
            return [a] if cost(k, a, n) <= limit and planner.fits(k, a, n) else None
        if (k, a) in failed:
            return None
        last, b = n - (stages - 1 - k), a        # one layer left for every later stage
        while b < last and cost(k, a, b + 1) <= limit and planner.fits(k, a, b + 1):
            b += 1
        for end in range(b, a, -1):             # the longest first: greedy when that works
            rest = place(k + 1, end)
            if rest is not None:
                return [a] + rest
        failed.add((k, a))
        return None
    return place(0, 0)


def _no_split_message(cost, planner, n):
    """Which stage cannot fit, packing every stage as full as the budget allows."""
    stages, names, a = planner.stages, [layer.name for layer in planner.layers], 0
    for k in range(stages):
        b = a + 1 if k < stages - 1 else n
        if not planner.fits(k, a, b):
            memory = planner.memory(k, a, b)
            what = f"layer {names[a]!r} alone" if b == a + 1 else \
                f"layers {names[a]!r}..{names[b - 1]!r} (all that remain)"
            return (f"Strategy: no split of model {planner.model.name!r} into {stages} stages "
                    f"keeps every stage under memory_budget={planner.budget:,} bytes: as stage "
                    f"{k}, {what} plans {memory.total:,} bytes at {planner.rows} rows per "
                    f"micro-batch (forward {memory.forward:,}, backward at least "
                    f"{memory.backward:,}, held activations {memory.held:,}), with every "
                    f"earlier stage as long as the budget allows. Use more stages, more "
                    f"micro-batches (smaller ones) or a larger budget")
        while k < stages - 1 and b + 1 <= n - (stages - 1 - k) and planner.fits(k, a, b + 1):
            b += 1
        a = b
    return f"Strategy: no split into {stages} stages fits memory_budget={planner.budget:,}"


def _rows(spec, rows):
    shape, _ = spec
    return (rows,) + tuple(shape[1:])


def _target_specs(stage):
    """Shapes of the last stage's target (and sample-weight) placeholders, batch first."""
    return [(tuple(v.shape), v.dtype) for v in stage.backward.inputs[1:-1]]


def _prod(shape):
    out = 1
    for d in shape:
        out *= int(d)
    return out


def _itemsize(dtype):
    import numpy as np
    return np.dtype(dtype).itemsize
