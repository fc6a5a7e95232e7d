"""Orders in which to run a graph: each input before its users.

``topological_order`` is a depth-first order. ``execution_order`` refines it for ops that ask to
run as early as possible (``Op.priority = "early"``, e.g. starting a non-blocking allreduce as
soon as its gradients exist) or as late as possible (``"late"``, e.g. waiting for it only right
before the updates that need it), which is what lets communication overlap the backward pass.
"""
import heapq

_PRIORITY = {"early": 0, "normal": 1, "late": 2}


def topological_order(outputs):
    """Vars reachable from ``outputs``, inputs first; iterative so deep graphs don't recurse."""
    order, done = [], set()
    for root in outputs:
        stack = [(root, False)]
        while stack:
            var, expanded = stack.pop()
            if var in done:
                continue
            if expanded:
                done.add(var)
                order.append(var)
                continue
            stack.append((var, True))
            stack.extend((inp, False) for inp in reversed(var.inputs) if inp not in done)
    return order


def _priority(var):
    return "late" if var.recompute else getattr(var.op, "priority", "normal")


def execution_order(outputs):
    """A topological order honouring ``Op.priority`` (and running recomputed values late); the
    depth-first order breaks ties, except that late nodes go in the order they are needed."""
    order = topological_order(outputs)
    if all(_priority(v) == "normal" for v in order):
        return order
    rank = {var: i for i, var in enumerate(order)}
    needed = _needed_at(order, rank)
    users, waiting = {var: [] for var in order}, {}
    for var in order:
        waiting[var] = len(set(var.inputs))
        for inp in set(var.inputs):
            users[inp].append(var)
    key = lambda v: (_PRIORITY[_priority(v)], needed[v] if _priority(v) == "late" else rank[v])
    ready = [key(v) + (i,) for i, v in enumerate(order) if waiting[v] == 0]
    heapq.heapify(ready)
    result = []
    while ready:
        var = order[heapq.heappop(ready)[-1]]
        result.append(var)
        for user in users[var]:
            waiting[user] -= 1
            if waiting[user] == 0:
                heapq.heappush(ready, key(user) + (rank[user],))
    return result


def _needed_at(order, rank):
    """For each node, the rank of the earliest non-late node that (transitively) needs it."""
    needed = {}
    for var in reversed(order):
        if var not in needed:
            needed[var] = len(order)
        own = needed[var] if _priority(var) == "late" else rank[var]
        for inp in var.inputs:
            needed[inp] = min(needed.get(inp, len(order)), own)
    return needed
