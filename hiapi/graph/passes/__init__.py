"""Graph passes, run in this order when a Function is compiled. Each can be switched off
(``HIAPI_PASSES=none``, ``HIAPI_PASSES=-fusion,-cse`` or ``hiapi.config.set_passes(...)``) so a
wrong result can be bisected to a pass."""
from hiapi.runtime import environment
from hiapi.graph.passes import (constant_folding, cse, dead_code, fusion, gemm_accumulate,
                                simplify)
from hiapi.graph.passes.rewrite import count_ops

PIPELINE = (("dead_code", dead_code.run), ("cse", cse.run),
            ("constant_folding", constant_folding.run), ("simplify", simplify.run),
            ("gemm_accumulate", gemm_accumulate.run), ("fusion", fusion.run))
NAMES = tuple(name for name, _ in PIPELINE)


def optimize(roots, enabled=None):
    """The roots of the rewritten graph, and ops counted after each pass."""
    enabled = environment.passes(NAMES) if enabled is None else set(enabled)
    stats = {"input": count_ops(roots)}
    for name, run in PIPELINE:
        if name in enabled:
            roots = run(roots)
            stats[name] = count_ops(roots)
    return roots, stats
