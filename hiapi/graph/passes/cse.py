"""Common-subexpression elimination: two nodes with equal ops (``Op.key``) on the same inputs
compute the same value, so one is kept. Ops with side effects or identity-keyed state
(placeholders, collectives) never match anything but themselves, and recomputed copies made by
sublinear memory planning are kept apart from the originals they must not merge back into."""
from hiapi.graph.passes.rewrite import rewrite, with_inputs


def run(roots):
    seen = {}

    def transform(var, inputs):
        if getattr(var.op, "stateful", False):
            return with_inputs(var, inputs)
        key = (var.op.key(), tuple(id(i) for i in inputs), var.recompute)
        if key not in seen:
            seen[key] = with_inputs(var, inputs)
        return seen[key]
    return rewrite(roots, transform)
