"""The memory report of a compiled step, in the spirit of the MegBrain table in the seed notes:
what the plan uses, what no plan could beat (the peak of simultaneously live bytes), what
keeping every value would cost, and what recomputation adds.

Its rows add up to what a training step really holds (project issue #15): the arena
(activations, then kernel scratch planned in it: ``memory/scratch.py``), the parameters, the
optimizer state, and what the executor itself allocates each step (the outputs it copies back
and the update values it must copy before writing any Variable). A test measures the resident
set of a process against the total (``tests/graph/test_memory_truth.py``)."""
import numpy as np

from hiapi.graph.memory.cost import flops
from hiapi.graph.memory.lower_bound import describe as describe_lower_bound


def _mb(n):
    return f"{n / 2**20:10.2f} MiB"


def _nbytes(spec):
    return int(np.prod(spec.shape)) * spec.dtype.itemsize


def _state_bytes(variables):
    unique = {id(v): v for v in variables}.values()
    return sum(int(np.prod(v.shape)) * np.dtype(v.dtype).itemsize for v in unique)


def executor_bytes(executable):
    """Bytes the executor allocates per run outside the plan: a host copy of every output and
    a copy of each update value that may alias a Variable."""
    order, specs = executable.order, executable.specs
    outputs = sum(_nbytes(specs[order[i]]) for i in executable.output_slots)
    copies = sum(_nbytes(specs[order[i]]) for _, i, alias in executable.update_slots if alias)
    return outputs + copies


def memory_rows(executable, model=None):
    """The report's rows in bytes: ``activations``, ``scratch``, ``parameters``,
    ``optimizer_state``, ``executor`` and their ``total``."""
    plan = executable.plan
    if plan is not None:
        activations, scratch = plan.activation_bytes, plan.scratch_bytes
    else:
        activations = sum(b.nbytes for b, (_, _, _, _, view) in
                          zip([executable.buffers[s[1]] for s in executable.steps],
                              executable.steps) if not view)
        scratch = sum(executable.scratch.values())
    parameters = _state_bytes(model.weights + model.state_variables) if model else 0
    optimizer = getattr(model, "optimizer", None) if model else None
    optimizer_state = _state_bytes(optimizer.variables) if optimizer is not None else 0
    rows = {"activations": activations, "scratch": scratch, "parameters": parameters,
            "optimizer_state": optimizer_state, "executor": executor_bytes(executable)}
    rows["total"] = sum(rows.values())
    return rows


def memory_report(executable, model=None):
    plan = executable.plan
    specs = executable.specs
    rows = memory_rows(executable, model)
    total = sum(flops(v, specs) for v in executable.order)
    extra = sum(flops(v, specs) for v in executable.order if v.recompute)
    device = f"{executable.backend.name} backend"
    lines = [f"Memory report ({device}, {len(executable.order)} values, "
             f"{len(executable.steps)} kernel calls)"]
    if plan is None:
        lines += ["  no plan (HIAPI_MEMORY=none): every value has its own buffer",
                  f"  activations (own buffers)  {_mb(rows['activations'])}",
                  f"  kernel scratch (own)       {_mb(rows['scratch'])}"]
    else:
        lines += [f"  planned (arena)            {_mb(plan.arena_bytes)}",
                  f"    activations              {_mb(rows['activations'])}",
                  f"    kernel scratch           {_mb(rows['scratch'])}  (beyond the "
                  f"activations; largest request {plan.largest_scratch / 2**20:.2f} MiB, "
                  f"{len(plan.scratch)} kernels)",
                  f"  lower bound (peak live)    {_mb(plan.lower_bound)}",
                  f"  upper bound (all values)   {_mb(plan.upper_bound)}",
                  f"  planned / lower bound      "
                  f"{plan.arena_bytes / max(plan.lower_bound, 1):10.3f}",
                  f"  in place                   {len(plan.shares):10d} ops"]
    lines += [f"  parameters and state       {_mb(rows['parameters'])}",
              f"  optimizer state            {_mb(rows['optimizer_state'])}",
              f"  executor (copies per step) {_mb(rows['executor'])}",
              f"  total                      {_mb(rows['total'])}",
              f"  recomputed values          {executable.recomputed_values:10d}",
              f"  recomputation              {extra / 1e9:10.3f} GFLOP "
              f"({100 * extra / max(total - extra, 1):.1f} % of the step's "
              f"{(total - extra) / 1e9:.3f} GFLOP)"]
    peak = describe_lower_bound(executable)           # what no plan of this graph can beat
    if peak is not None:
        lines.append(peak)
    return "\n".join(lines)
