"""Topological order of the Vars that some outputs need (each input before its users)."""


def topological_order(outputs):
    """Vars reachable from ``outputs``, inputs first; iterative so deep graphs don't recurse."""
    order, done, on_stack = [], set(), set()
    for root in outputs:
        if root in done:
            continue
        stack = [(root, False)]
        while stack:
            var, expanded = stack.pop()
            if expanded:
                on_stack.discard(var)
                if var not in done:
                    done.add(var)
                    order.append(var)
                continue
            if var in done:
                continue
            on_stack.add(var)
            stack.append((var, True))
            for inp in reversed(var.inputs):
                if inp not in done:
                    stack.append((inp, False))
    return order
