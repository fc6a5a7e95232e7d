"""Elementwise fusion: maximal trees of elementwise ops become one ``fused_elementwise`` op.

A node joins its consumer's group when both are elementwise and it has no other consumer (and
is not itself an output). The fused op carries the tree as a small *program* of steps
``(op, argument refs)`` over its external inputs; a backend can compile the program to one
kernel (numba, cupy), and the numpy backend runs the members' own kernels chunk by chunk in
a small workspace, writing in place wherever a step's input dies there.
"""
from collections import Counter

from hiapi.graph.op import Op, Spec
from hiapi.graph.passes.rewrite import with_inputs
from hiapi.graph.schedule import topological_order
from hiapi.graph.var import Var


class FusedElementwise(Op):
    """``program``: steps ``(op, refs)`` where a ref is ``("input", k)`` or ``("step", j)``;
    the last step's value is the output."""
    name = "fused_elementwise"

    def __init__(self, program, shapes):
        self.program = program
        self.shapes = shapes            # symbolic (shape, dtype) of each step, for backends
        self.scratch = {}               # the backend's per-shape plans, kept between calls

    @property
    def inplace(self):
        """Only the last step writes the output, after every other step has read its inputs."""
        return self.program[-1][0].inplace

    def key(self):
        return (FusedElementwise, tuple((op.key(), refs) for op, refs in self.program))

    def infer(self, *inputs):
        specs = []
        for op, refs in self.program:
            args = [inputs[k] if kind == "input" else specs[k] for kind, k in refs]
            specs.append(Spec(*op.infer(*args)))
        return specs[-1]

    def grad(self, inputs, y, g):
        raise NotImplementedError("fusion runs after autodiff; fused ops have no gradient")

    def __repr__(self):
        return "Fused(" + ", ".join(op.name for op, _ in self.program) + ")"


def _fusible(var):
    return var.op.elementwise and var.op.view_of is None and not var.recompute


def run(roots):
    order = topological_order(roots)
    consumers = Counter(i for v in order for i in v.inputs)
    consumers.update(roots)
    fusible_users = Counter(i for v in order if _fusible(v) for i in set(v.inputs))
    absorbed = {v for v in order if _fusible(v) and consumers[v] == 1 and
                fusible_users[v] == 1 and v not in roots}
    new = {}
    for var in order:
        if var in absorbed:
            continue
        if _fusible(var) and any(i in absorbed for i in var.inputs):
            new[var] = _fuse(var, absorbed, new)
        else:
            new[var] = with_inputs(var, tuple(new[i] for i in var.inputs))
    return [new[r] for r in roots]


def _fuse(top, absorbed, new):
    """One fused node for ``top`` and the absorbed nodes beneath it; its inputs are the
    (rewritten) values the group reads from outside."""
    program, externals, steps = [], [], {}

    def ref(var):
        if var is not top and var not in absorbed:
            outside = new[var]
            if outside not in externals:
                externals.append(outside)
            return ("input", externals.index(outside))
        if var not in steps:
            refs = tuple(ref(child) for child in var.inputs)
            program.append((var.op, refs))
            steps[var] = len(program) - 1
        return ("step", steps[var])

    ref(top)
    shapes = tuple((v.shape, v.dtype) for v, _ in sorted(steps.items(), key=lambda kv: kv[1]))
    return Var(FusedElementwise(tuple(program), shapes), tuple(externals), top.shape,
               top.dtype, top.name)
