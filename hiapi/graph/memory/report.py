"""The memory report of a compiled step, in the spirit of the MegBrain table in the seed notes:
what the plan uses, what no plan could beat (the peak of simultaneously live bytes), what
keeping every value would cost, and what recomputation adds."""
import numpy as np

from hiapi.graph.memory.cost import flops


def _mb(n):
    return f"{n / 2**20:10.2f} MiB"


def memory_report(executable, model=None):
    plan = executable.plan
    specs = executable.specs
    state = model.weights + model.state_variables if model is not None else []
    if model is not None and getattr(model, "optimizer", None) is not None:
        state = state + model.optimizer.variables
    state_bytes = sum(int(np.prod(v.shape)) * v.dtype.itemsize for v in state)
    total = sum(flops(v, specs) for v in executable.order)
    extra = sum(flops(v, specs) for v in executable.order if v.recompute)
    device = f"{executable.backend.name} backend"
    lines = [f"Memory report ({device}, {len(executable.order)} values, "
             f"{len(executable.steps)} kernel calls)"]
    if plan is None:
        lines.append("  no plan (HIAPI_MEMORY=none): every value has its own buffer")
    else:
        lines += [f"  planned (arena)            {_mb(plan.arena_bytes)}",
                  f"  lower bound (peak live)    {_mb(plan.lower_bound)}",
                  f"  upper bound (all values)   {_mb(plan.upper_bound)}",
                  f"  planned / lower bound      {plan.arena_bytes / max(plan.lower_bound, 1):10.3f}",
                  f"  in place                   {len(plan.shares):10d} ops"]
    lines += [f"  parameters and state       {_mb(state_bytes)}",
              f"  recomputed values          {executable.recomputed_values:10d}",
              f"  recomputation              {extra / 1e9:10.3f} GFLOP "
              f"({100 * extra / max(total - extra, 1):.1f} % of the step's "
              f"{(total - extra) / 1e9:.3f} GFLOP)"]
    return "\n".join(lines)
