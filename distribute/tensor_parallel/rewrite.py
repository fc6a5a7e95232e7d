"""The tensor-parallel rewrite of a traced training graph (the layers do not know about it).

Embedding lookups are split by vocabulary (each rank keeps a block of rows; ids outside it
look up zeros and an allreduce adds the owning rank's rows). For the rest it looks for
Megatron-LM's pattern: a ``matmul`` by a Dense kernel (or a ``conv2d`` by a Conv2D
kernel) whose output reaches, through channel-local ops only (elementwise ops such as the bias
add and the activation, with biases and scalars as their other inputs; max and average
pooling), another ``matmul``/``conv2d`` by a kernel whose input dimension is that width. The
first becomes *column-parallel* (each of T ranks keeps 1/T of the output columns or filters,
and the matching slice of the bias), the second *row-parallel* (1/T of its input rows or
channels), with ``enter_parallel`` before the first and ``leave_parallel`` (the allreduce)
after the second. Everything else stays replicated. The sliced weights are new Variables,
so the optimizer keeps state for the slices only.
"""
import numpy as np

from hiapi.graph.ops.sources import Read
from hiapi.graph.passes.rewrite import rewrite, with_inputs
from hiapi.graph.schedule import topological_order
from hiapi.graph.variable import Variable
from hiapi.distribute.tensor_parallel.ops import EnterParallel, LeaveParallel

CHANNEL_LOCAL = {"max_pool2d", "avg_pool2d"}
PRODUCTS = {"matmul": (-1, -2), "conv2d": (-1, -2)}     # kernel axis: (columns, rows)


def _kernel(var, kernels):
    if var.op.name not in PRODUCTS or len(var.inputs) != 2:
        return None
    weight = var.inputs[1]
    if isinstance(weight.op, Read) and id(weight.op.variable) in kernels and \
            getattr(var.op, "groups", 1) == 1:
        return weight.op.variable
    return None


class Pair:
    """One column-parallel product, the channel-local ops after it, and its row-parallel
    consumers."""

    def __init__(self, column, chain, rows, biases):
        self.column, self.chain, self.rows, self.biases = column, chain, rows, biases


def find_pairs(roots, kernels, parts):
    order = topological_order(roots)
    consumers = {}
    for var in order:
        for inp in var.inputs:
            consumers.setdefault(inp, []).append(var)
    root_set = set(roots)
    pairs, taken = [], set()
    for var in order:
        kernel = _kernel(var, kernels)
        if kernel is None or var in taken or kernel.shape[-1] % parts:
            continue
        pair = _follow(var, kernel.shape[-1], consumers, kernels, root_set)
        if pair is not None and not (set(pair.rows) & taken) and _only_read_here(pair, consumers):
            pairs.append(pair)
            taken |= {var} | pair.chain | set(pair.rows)
    return pairs


def find_lookups(roots, tables, parts):
    """Embedding lookups (``gather`` from an Embedding's table) whose table nothing else reads
    and that has at least ``parts`` rows: split by vocabulary."""
    order = topological_order(roots)
    consumers = {}
    for var in order:
        for inp in var.inputs:
            consumers.setdefault(inp, []).append(var)
    found = set()
    for var in order:
        if var.op.name != "gather" or not isinstance(var.inputs[0].op, Read):
            continue
        table = var.inputs[0].op.variable
        if id(table) in tables and table.shape[0] >= parts and \
                all(user.op.name == "gather" for user in consumers[var.inputs[0]]):
            found.add(var)
    return found


def _only_read_here(pair, consumers):
    """The sliced weights feed nothing but the pair (a regularizer reading a whole kernel or
    bias would see a value no rank trains any more)."""
    products = {pair.column} | set(pair.rows)
    for product in products:
        if any(user not in products for user in consumers[product.inputs[1]]):
            return False
    return all(user in pair.chain for bias in pair.biases for user in consumers[bias])


def _follow(column, width, consumers, kernels, roots):
    chain, rows, biases, frontier = set(), [], set(), [column]
    while frontier:
        var = frontier.pop()
        if var in roots or not consumers.get(var):
            return None                       # the sliced value would be seen whole
        for user in consumers[var]:
            kernel = _kernel(user, kernels)
            if kernel is not None and user.inputs[0] is var and user.inputs[1] is not var \
                    and kernel.shape[-2] == width:
                if user not in rows:
                    rows.append(user)
                continue
            local = _channel_local(user, var, width, chain | {column}, biases)
            if local is None:
                return None
            if user not in chain:
                chain.add(user)
                frontier.append(user)
    return Pair(column, chain, rows, biases) if rows else None


def _channel_local(user, var, width, sliced, biases):
    if user.op.name in CHANNEL_LOCAL and user.inputs[0] is var and len(user.inputs) == 1:
        return True
    if not getattr(user.op, "elementwise", False) or tuple(user.shape) != tuple(var.shape):
        return None
    found = set()
    for inp in user.inputs:
        if inp in sliced or inp is var:
            continue
        if all(d == 1 for d in inp.shape):
            continue                          # a scalar broadcasts over any slice
        if isinstance(inp.op, Read) and tuple(inp.shape) == (width,):
            found.add(inp)                    # a bias: sliced with the columns
            continue
        return None
    biases |= found
    return True


class TensorParallelRewrite:
    """Apply the pairs to a graph on rank ``rank`` of ``parts``; ``local`` maps each sliced
    Variable to its slice (``(variable, axis)`` to slice it along)."""

    def __init__(self, communicator, parts, rank):
        self.communicator, self.parts, self.rank = communicator, parts, rank
        self.slices = {}            # id(full Variable) -> (full, local Variable, axis)

    def _local(self, variable, axis):
        entry = self.slices.get(id(variable))
        if entry is None:
            value = np.array_split(variable.numpy(), self.parts, axis=axis)[self.rank]
            local = Variable(value, name=f"{variable.name}/tensor_parallel_{self.rank}",
                             trainable=variable.trainable)
            local.constraint = variable.constraint
            entry = self.slices[id(variable)] = (variable, local, axis)
        return entry[1]

    def _vocabulary_parallel(self, lookup, table_read, ids):
        """``table[ids]`` with this rank's rows only: ids outside them give zeros, and the
        allreduce adds the one rank that has each row. The first rank takes every id below
        its end and the last every id from its start, so an id out of the whole table's range
        still reaches a lookup that rejects it (the Embedding's own error)."""
        from hiapi.graph import ops
        table = table_read.op.variable
        local = self._local(table, 0)
        bounds = np.cumsum([0] + [len(part) for part in np.array_split(
            np.arange(table.shape[0]), self.parts)])
        start, stop = int(bounds[self.rank]), int(bounds[self.rank + 1])
        mine = None
        if self.rank > 0:
            mine = ids >= ops.constant(start, ids.dtype)
        if self.rank < self.parts - 1:
            below = ids < ops.constant(stop, ids.dtype)
            mine = below if mine is None else ops.where(mine, below, mine)
        shifted = ids - ops.constant(start, ids.dtype) if start else ids
        safe = shifted if mine is None else ops.where(mine, shifted, ops.constant(0, ids.dtype))
        rows = type(lookup.op)(where=f"{lookup.op.where} (tensor_parallel: rows [{start}, "
                                     f"{stop}) of {table.shape[0]} on this rank; the index is "
                                     f"counted from row {start})")(local.read, safe)
        if mine is not None:
            keep = ops.cast(ops.expand_dims(mine, -1), rows.dtype)
            for _ in range(rows.ndim - keep.ndim):
                keep = ops.expand_dims(keep, -1)
            rows = rows * keep
        return LeaveParallel(self.communicator)(rows)

    def apply(self, roots, kernels, tables=()):
        lookups = find_lookups(roots, tables, self.parts)
        pairs = find_pairs(roots, kernels, self.parts)
        columns = {p.column: p for p in pairs}
        rows = {r: p for p in pairs for r in p.rows}
        biases = {b for p in pairs for b in p.biases}
        chain = set().union(*(p.chain for p in pairs)) if pairs else set()

        def transform(var, inputs):
            if var in lookups:
                return self._vocabulary_parallel(var, *inputs)
            if var in columns:
                x, weight = inputs
                local = self._local(weight.op.variable, var.ndim - 1)
                return var.op(EnterParallel(self.communicator)(x), local.read)
            if var in rows:
                x, weight = inputs
                local = self._local(weight.op.variable, weight.ndim - 2)
                return LeaveParallel(self.communicator)(var.op(x, local.read))
            if var in biases:
                return self._local(var.op.variable, 0).read
            if var in chain:
                return var.op(*inputs)          # shapes change: infer again
            return with_inputs(var, inputs)
        return rewrite(roots, transform), len(pairs) + len(lookups)
