"""Where to cut a model's chain of layers (``chain.py``) into pipeline stages.

By default the cut balances estimated cost: each op of a layer's forward graph costs, on the
roofline, the larger of its FLOPs (the cost model the profiler uses,
``hiapi.graph.memory.cost.flops``) and its bytes moved times the machine's ridge point (FLOPs a
core does in the time it moves a byte: memory-bound pooling, normalisation and elementwise
layers are not free), times three for forward plus backward. The split minimises the slowest
stage's work per micro-batch as the stages run it (``stage_actions``: re-materialisation on
all but the last stage, no input gradient on the first), with the classic linear-partition
dynamic programme, exact for contiguous stages.
``pipeline_split=[names]`` names the first layer of stages 1..K-1 instead.
"""
import numpy as np

from hiapi.graph import placeholder
from hiapi.graph.memory.cost import flops
from hiapi.graph.op import Spec
from hiapi.graph.schedule import topological_order
from hiapi.layers.layer_io import not_a_node
from hiapi.graph.tracing import collect_state


# FLOP per byte where the roofline bends, measured on the development machine (133.8 GFLOP/s
# float32 GEMM against 22.7 GB/s: docs/performance.md); only the ratio between layers matters.
RIDGE_FLOP_PER_BYTE = 6.0


def _nbytes(spec):
    return int(np.prod(spec.shape)) * spec.dtype.itemsize


def layer_costs(layers, input_shape, input_dtype, batch):
    """Estimated cost (FLOP-equivalents on the roofline) of forward plus backward of each
    layer, for ``batch`` samples."""
    costs = []
    shape, dtype = (batch,) + tuple(input_shape[1:]), input_dtype
    for layer in layers:
        x = placeholder(shape, dtype)
        with collect_state(), not_a_node():
            y = layer(x, training=True)
        order = topological_order([y])
        specs = {v: Spec(tuple(v.shape), np.dtype(v.dtype)) for v in order}
        costs.append(3 * sum(
            max(flops(v, specs), RIDGE_FLOP_PER_BYTE * (
                _nbytes(specs[v]) + sum(_nbytes(specs[i]) for i in v.inputs)))
            for v in order if not v.op.is_source))
        shape, dtype = tuple(y.shape), y.dtype
    return costs


def stage_actions(costs, starts):
    """Estimated (forward, backward) cost per micro-batch of each stage's two actions, as
    ``stage.py`` runs them. A layer's cost is forward plus backward, about three forwards
    (``layer_costs``). A stage but the last: forward, a third of its layers' cost; backward,
    the forward again (re-materialisation) and the backward, its whole cost. The last stage's
    forward only receives (its backward runs the forward); the first stage computes no
    gradient for its input, about a forward of its first layer less. Balanced stages (equal
    forward plus backward) leave the 1F1B bubble at (K-1)/(M+K-1) (``schedules.simulate``)."""
    bounds = list(starts) + [len(costs)]
    actions = []
    for k, (a, b) in enumerate(zip(bounds, bounds[1:])):
        total = float(sum(costs[a:b]))
        last = k == len(starts) - 1
        forward = 0.0 if last else total / 3
        backward = total - (costs[0] / 3 if k == 0 and not last else 0.0)
        actions.append((forward, backward))
    return actions


class StageCost:
    """``stage_cost(k, j, i)``: forward plus backward of stage k of ``stages`` holding layers
    j..i-1, as ``stage_actions`` counts it, from prefix sums."""

    def __init__(self, costs, stages):
        self.costs, self.stages = costs, stages
        self.prefix = np.concatenate([[0.0], np.cumsum(costs, dtype=np.float64)])

    def __call__(self, k, j, i):
        total = self.prefix[i] - self.prefix[j]
        if k == self.stages - 1:
            return total
        return 4 / 3 * total - (self.costs[0] / 3 if k == 0 else 0.0)


def balanced_split(costs, stages):
    """Start index of each stage that minimises the largest stage's forward plus backward
    (``stage_actions``): the classic linear-partition dynamic programme over contiguous
    stages, exact for this cost model."""
    n = len(costs)
    if stages > n:
        raise ValueError(f"Strategy: pipeline_stages={stages} is more than the model's {n} "
                         f"layers")
    stage_cost = StageCost(costs, stages)
    inf = float("inf")
    best = [[inf] * (n + 1) for _ in range(stages + 1)]   # best[k][i]: first i layers, k stages
    cut = [[0] * (n + 1) for _ in range(stages + 1)]
    best[0][0] = 0.0
    for k in range(1, stages + 1):
        for i in range(k, n + 1):
            for j in range(k - 1, i):                        # the last stage is layers j..i-1
                value = max(best[k - 1][j], stage_cost(k - 1, j, i))
                if value < best[k][i]:
                    best[k][i], cut[k][i] = value, j
    starts, i = [], n
    for k in range(stages, 0, -1):
        i = cut[k][i]
        starts.append(i)
    return starts[::-1]


def output_spec(layers, spec):
    """(shape, dtype) of what ``layers`` give for an input of ``spec``, traced."""
    y = placeholder(*spec)
    with collect_state(), not_a_node():
        for layer in layers:
            y = layer(y, training=True)
    return tuple(y.shape), y.dtype


def split_from_names(layers, names, stages):
    """Stage starts from the names of the first layer of stages 1..K-1."""
    index = {layer.name: i for i, layer in enumerate(layers)}
    if len(names) != stages - 1:
        raise ValueError(f"Strategy: pipeline_split names the first layer of stages 1..K-1: "
                         f"{stages - 1} names for pipeline_stages={stages}, got {list(names)}")
    unknown = [name for name in names if name not in index]
    if unknown:
        raise ValueError(f"Strategy: pipeline_split names layers {unknown} that the model does "
                         f"not have (its layers: {list(index)})")
    starts = [0] + [index[name] for name in names]
    if any(b <= a for a, b in zip(starts, starts[1:])):
        raise ValueError(f"Strategy: pipeline_split {list(names)} must name layers in model "
                         f"order, each after the previous (every stage needs a layer)")
    return starts
