"""Dense chains: consecutive ``act(x @ W + b)`` layers of an inference graph become one
``dense_chain`` op, for backends that ask for it (``Backend.rewrites``: numba).

Why: at Keras's default batch of 32 a small model's forward is a few short kernels, and the calls
between them cost as much as the arithmetic. The 784-128-10 MLP's ``predict`` took 113 us a
batch against torch's 61; its forward written as one numba call on transposed weights took 40
(docs/performance.md, "The first route, measured"). The op hands the backend the whole chain,
so its kernel can run each block of rows through every layer in one call.

Matched, per layer: ``matmul(a, W)`` with ``a`` 2-D float32, then ``+ b``, then optionally one
of relu, sigmoid, tanh (what ``Dense`` builds); ``W`` and ``b`` read Variables and feed nothing
else, and every intermediate value feeds only the next node of the chain. So only inference
graphs match: in a train step every weight also feeds its update (and activations feed the
backward pass). A layer joins the chain before it when its input is that chain's output and
nothing else reads it. Runs before ``fusion`` (which would take the bias and activation).
"""

import numpy as np

from hiapi.graph.op import Op
from hiapi.graph.op_namespace import ops as O
from hiapi.graph.ops.elementwise import Add, Relu, Sigmoid, Tanh
from hiapi.graph.ops.linalg import MatMul
from hiapi.graph.ops.sources import Read
from hiapi.graph.passes.rewrite import order_and_users, with_inputs

ACTIVATIONS = {Relu: "relu", Sigmoid: "sigmoid", Tanh: "tanh"}


class DenseChain(Op):
    """``act_L(... act_1(x @ W_1 + b_1) ... @ W_L + b_L)``; inputs ``x, W_1, b_1, ..., W_L,
    b_L``; ``activations``: one name per layer ("linear", "relu", "sigmoid", "tanh").
    ``weights_are_state``: the weights and biases are Variables, which change only through
    writes that ``hiapi.runtime.state_writes`` counts, so a kernel may keep copies of them in
    another layout between calls (the pass sets it; it matches only Variable reads)."""
    name = "dense_chain"

    def __init__(self, activations, weights_are_state=False):
        self.activations = tuple(activations)
        self.weights_are_state = weights_are_state

    def infer(self, x, *params):
        if len(params) != 2 * len(self.activations):
            raise ValueError(f"dense_chain: {len(self.activations)} layers need "
                             f"{2 * len(self.activations)} weights and biases, got "
                             f"{len(params)}")
        shape = x.shape
        for layer, (w, b) in enumerate(zip(params[::2], params[1::2])):
            if len(shape) != 2 or w.ndim != 2 or b.shape != (w.shape[1],) or \
                    shape[1] != w.shape[0]:
                raise ValueError(f"dense_chain: layer {layer} takes input {shape} with kernel "
                                 f"{w.shape} and bias {b.shape}; expected (batch, k), (k, n) "
                                 f"and (n,)")
            shape = (shape[0], w.shape[1])
        return shape, x.dtype

    def grad(self, inputs, output, gout):
        """The gradient of the unfused layers (the pass builds this op only where no gradient
        is taken; this keeps the op differentiable like every other)."""
        from hiapi.graph.autodiff import grad
        return grad(unfused(inputs[0], inputs[1:], self.activations), list(inputs), gout)


def unfused(x, params, activations):
    """The chain as the primitive ops it replaced."""
    for w, b, act in zip(params[::2], params[1::2], activations):
        x = O.matmul(x, w) + b
        x = x if act == "linear" else getattr(O, act)(x)
    return x


def _layer(matmul, users, roots):
    """``(a, W, b, activation, output)`` for the layer that starts at ``matmul``, or None."""
    if not isinstance(matmul.op, MatMul) or matmul.recompute:
        return None
    a, w = matmul.inputs
    if a.ndim != 2 or a.dtype != np.float32 or not _weight(w, users, 2):
        return None
    add = _only_user(matmul, users, roots)
    if add is None or not isinstance(add.op, Add) or add.recompute:
        return None
    b = add.inputs[1] if add.inputs[0] is matmul else add.inputs[0]
    if b is matmul or not _weight(b, users, 1) or b.shape != (w.shape[1],) or \
            add.shape != matmul.shape:
        return None
    act = _only_user(add, users, roots)
    if act is not None and type(act.op) in ACTIVATIONS and not act.recompute:
        return a, w, b, ACTIVATIONS[type(act.op)], act
    return a, w, b, "linear", add


def _weight(var, users, ndim):
    return isinstance(var.op, Read) and var.ndim == ndim and var.dtype == np.float32 and \
        len(users[var]) == 1


def _only_user(var, users, roots):
    """The one node reading ``var``, when it is read once and is not an output."""
    if len(users[var]) != 1 or var in roots:
        return None
    return users[var][0]


def run(roots, rewrites=frozenset()):
    if "dense_chain" not in rewrites:
        return roots
    order, users = order_and_users(roots)
    root_set = set(roots)
    chain_of = {}        # a layer's output -> (x, params, activations) of the chain ending there
    for var in order:
        layer = _layer(var, users, root_set)
        if layer is None:
            continue
        a, w, b, act, out = layer
        before = chain_of.pop(a, None) if len(users[a]) == 1 and a not in root_set else None
        x, params, acts = before if before else (a, (), ())
        chain_of[out] = (x, params + (w, b), acts + (act,))
    if not chain_of:
        return roots
    # rewrite()'s walk, but a chain's replacement reads its input x, which is not an input of
    # the node it replaces, so the map of new nodes is kept here
    new = {}
    for var in order:
        if var in chain_of:
            x, params, acts = chain_of[var]
            inputs = [new[x]] + [new[p] for p in params]
            new[var] = DenseChain(acts, weights_are_state=True)(*inputs, name=var.name)
        else:
            new[var] = with_inputs(var, tuple(new[i] for i in var.inputs))
    return [new[r] for r in roots]

