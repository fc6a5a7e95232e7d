"""Memory optimization: liveness, the static arena plan, in-place execution, the report."""
from hiapi.graph.memory.liveness import last_uses, storage_bases, storage_intervals
from hiapi.graph.memory.planner import MemoryPlan, plan_memory
