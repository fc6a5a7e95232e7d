"""``einsum``: Einstein summation as in ``numpy.einsum`` / ``keras.ops.einsum``.

Symbolically it is a composite, so its gradient (and gradients of gradients) come from the
ops it is written with: operands are contracted two at a time (left to right, as numpy without
``optimize``); each pair is transposed to (shared kept axes, own axes, summed axes), merged
into one matrix product with the shared axes as its batch, and the result unfolded and put in
the order asked for. Axes only one operand has and nothing later needs are summed first::

    ops.einsum("bij,ijkl->bkl", x, kernel)     # the RNN guide's nested cell
    ops.einsum("bqhd,bkhd->bhqk", q, k)        # attention scores

Supported: explicit (``->``) and implicit output, ``...`` for leading axes, any number of
operands. Not supported symbolically: a letter repeated within one operand (a diagonal), and
a product whose merged axes would leave two sizes unknown (an error says so).
"""
import numpy as np

from hiapi.graph import ops as O
from hiapi.ops.core import eager_array, is_symbolic
from hiapi.graph.op import as_var


def einsum(subscripts, *operands):
    """``numpy.einsum(subscripts, *operands)`` on arrays; graph ops on symbolic tensors."""
    if not is_symbolic(*operands):
        return np.asarray(np.einsum(subscripts, *[eager_array(x) for x in operands]))
    operands = [as_var(x) for x in operands]
    inputs, output = _parse(subscripts, operands)
    x, letters = operands[0], inputs[0]
    for k in range(1, len(operands)):
        needed = set(output).union(*inputs[k + 1:])
        x, letters = _contract(x, letters, operands[k], inputs[k], needed, subscripts)
    x, letters = _sum_unneeded(x, letters, set(output))
    return O.transpose(x, [letters.index(c) for c in output]) if letters != output else x


def _parse(subscripts, operands):
    spec = subscripts.replace(" ", "")
    given, _, output = spec.partition("->")
    inputs = given.split(",")
    if len(inputs) != len(operands):
        raise ValueError(f"einsum: {subscripts!r} names {len(inputs)} operands, got "
                         f"{len(operands)}")
    spare = iter(c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in spec)
    ellipsis = "".join(next(spare) for _ in range(max(
        [x.ndim - len(s.replace("...", "")) for s, x in zip(inputs, operands)] + [0])))
    expanded = []
    for s, x in zip(inputs, operands):
        dots = x.ndim - len(s.replace("...", ""))
        s = s.replace("...", ellipsis[len(ellipsis) - dots:] if dots else "")
        if len(s) != x.ndim:
            raise ValueError(f"einsum: {subscripts!r} gives {len(s)} letters for an operand of "
                             f"shape {x.shape}")
        if len(set(s)) != len(s):
            raise ValueError(f"einsum: {subscripts!r} repeats a letter within one operand (a "
                             f"diagonal), which is not supported on symbolic tensors")
        expanded.append(s)
    if "->" in spec:
        output = output.replace("...", ellipsis)
    else:
        counts = "".join(expanded)
        output = ellipsis + "".join(sorted(c for c in set(counts) if counts.count(c) == 1
                                           and c not in ellipsis))
    unknown = set(output) - set("".join(expanded))
    if unknown:
        raise ValueError(f"einsum: output letters {sorted(unknown)} of {subscripts!r} are in "
                         f"no operand")
    return expanded, output


def _sum_unneeded(x, letters, needed):
    axes = [i for i, c in enumerate(letters) if c not in needed]
    if not axes:
        return x, letters
    return O.sum(x, axes), "".join(c for c in letters if c in needed)


def _contract(x, xl, y, yl, needed, subscripts):
    """x (letters xl) times y (letters yl), keeping the letters in ``needed``."""
    x, xl = _sum_unneeded(x, xl, needed | set(yl))
    y, yl = _sum_unneeded(y, yl, needed | set(xl))
    batch = [c for c in xl if c in yl and c in needed]
    summed = [c for c in xl if c in yl and c not in needed]
    own_x = [c for c in xl if c not in yl]
    own_y = [c for c in yl if c not in xl]
    size = {}
    for letters, v in ((xl, x), (yl, y)):
        for c, d in zip(letters, v.shape):
            size[c] = d if size.get(c) is None else size[c]      # a known size wins
    a = _grouped(O.transpose(x, [xl.index(c) for c in batch + own_x + summed]),
                 batch, [own_x, summed], size, subscripts)
    b = _grouped(O.transpose(y, [yl.index(c) for c in batch + summed + own_y]),
                 batch, [summed, own_y], size, subscripts)
    product = O.matmul(a, b)
    letters = batch + own_x + own_y
    if len(own_x) != 1 or len(own_y) != 1:
        target = [size[c] for c in letters]
        if None not in target:        # a size only the other operand knew: one axis stays free
            groups = [[c] for c in batch] + [own_x, own_y]
            free = [g for g, d in zip(groups, product.shape) if d is None and g]
            if free:
                target[letters.index(free[0][0])] = None
        product = _reshape(product, target, subscripts)
    return product, "".join(letters)


def _grouped(v, batch, groups, size, subscripts):
    """``v`` (axes: batch, then each group's) with each group merged into one axis."""
    if all(len(g) == 1 for g in groups):
        return v
    dims = list(v.shape)
    merged, start = dims[:len(batch)], len(batch)
    for g in groups:
        part = dims[start:start + len(g)]
        merged.append(None if None in part else int(np.prod(part, dtype=np.int64)))
        start += len(g)
    return _reshape(v, merged, subscripts)


def _reshape(v, shape, subscripts):
    if shape.count(None) > 1:
        raise ValueError(f"einsum: {subscripts!r} needs a reshape to {tuple(shape)} with more "
                         f"than one unknown size; give the operands known shapes")
    return O.reshape(v, tuple(-1 if d is None else d for d in shape))
