"""Dead-code elimination.

Only what the outputs and updates need is ever scheduled, so unreachable nodes are dropped by
construction; this pass removes what is reachable but does nothing: updates that write a
Variable's own value back, and ``identity``/``stop_gradient`` nodes (their only purpose, a
distinct Var per layer output and a cut for autodiff, is over once the graph is compiled).
"""
from hiapi.graph.ops.elementwise import StopGradient
from hiapi.graph.ops.shape import Identity
from hiapi.graph.passes.rewrite import rewrite, with_inputs


def run(roots):
    return rewrite(roots, lambda var, inputs: inputs[0] if isinstance(
        var.op, (Identity, StopGradient)) else with_inputs(var, inputs))


def live_updates(updates):
    """Updates other than ``variable <- variable``."""
    return [(variable, value) for variable, value in updates if value is not variable.read]
