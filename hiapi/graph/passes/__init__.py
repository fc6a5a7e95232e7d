"""Graph passes, run in this order when a Function is compiled. Each can be switched off
(``HIAPI_PASSES=none``, ``HIAPI_PASSES=-fusion,-cse`` or ``hiapi.config.set_passes(...)``) so a
wrong result can be bisected to a pass."""
from functools import partial

from hiapi.runtime import environment
from hiapi.graph.passes import (classification_totals, constant_folding, cse, dead_code,
                                dense_chain, float32_kernels, fusion, gemm_accumulate,
                                simplify)
from hiapi.graph.passes.rewrite import count_ops

PIPELINE = (("dead_code", dead_code.run), ("cse", cse.run),
            ("constant_folding", constant_folding.run), ("simplify", simplify.run),
            ("float32_kernels", float32_kernels.run),
            ("gemm_accumulate", gemm_accumulate.run),
            ("classification_totals", classification_totals.run),
            ("dense_chain", dense_chain.run), ("fusion", fusion.run))
NAMES = tuple(name for name, _ in PIPELINE)
# passes that read something of the backend: the keyword each takes (``optimize``'s argument)
BACKEND_OPTIONS = {"float32_kernels": "float32_ops", "dense_chain": "rewrites",
                   "classification_totals": "rewrites"}


def optimize(roots, enabled=None, float32_ops=frozenset(), rewrites=frozenset()):
    """The roots of the rewritten graph, and ops counted after each pass. ``float32_ops``:
    the backend's ops to run in float32 on 16-bit values (``passes/float32_kernels.py``);
    ``rewrites``: the optional passes the backend asks for (``Backend.rewrites``: a pass that
    builds an op only some backends run fast, such as ``dense_chain``, runs only for them)."""
    enabled = environment.passes(NAMES) if enabled is None else set(enabled)
    options = {"float32_ops": float32_ops, "rewrites": rewrites}
    stats = {"input": count_ops(roots)}
    for name, run in PIPELINE:
        if name in enabled:
            if name in BACKEND_OPTIONS:
                option = BACKEND_OPTIONS[name]
                run = partial(run, **{option: options[option]})
            roots = run(roots)
            stats[name] = count_ops(roots)
    return roots, stats
