"""``x[key]`` on symbolic tensors: basic numpy indexing (integers, step-1 slices, ``None``,
``...``) lowered to slice, squeeze and expand_dims, so custom layers can write ``x[:, 0]`` or
``mask[..., None]`` as they would with Keras tensors."""
from hiapi.graph.op_namespace import ops as O
from hiapi.graph.ops.array import Slice


def getitem(x, key):
    key = key if isinstance(key, tuple) else (key,)
    for item in key:
        if not (item is None or item is Ellipsis or isinstance(item, (int, slice))) or \
                isinstance(item, bool):
            raise TypeError(f"indexing a symbolic tensor supports integers, slices, None and "
                            f"..., got {item!r} (use ops.take/gather-style ops for arrays of "
                            f"indices)")
    if sum(item is Ellipsis for item in key) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(1 for item in key if item is not None and item is not Ellipsis)
    if used > x.ndim:
        raise IndexError(f"too many indices for a tensor of shape {x.shape}: {used} given")
    if Ellipsis not in key:
        key = key + (Ellipsis,)
    at = key.index(Ellipsis)
    key = key[:at] + (slice(None),) * (x.ndim - used) + key[at + 1:]
    bounds, drop, new_axes, axis = [], [], [], 0
    for item in key:
        if item is None:
            new_axes.append(len(bounds) - len(drop) + len(new_axes))
            continue
        size = x.shape[axis]
        if isinstance(item, int):
            if size is not None and not -size <= item < size:
                raise IndexError(f"index {item} is out of bounds for axis {axis} with size "
                                 f"{size}")
            bounds.append((item, item + 1 if item != -1 else None))
            drop.append(axis)
        else:
            if item.step not in (None, 1):
                raise ValueError(f"slicing a symbolic tensor supports step 1 only, got "
                                 f"step {item.step}")
            bounds.append((item.start, item.stop))
        axis += 1
    y = x if all(b == (None, None) for b in bounds) else Slice(tuple(bounds))(x)
    if drop:
        y = O.squeeze(y, tuple(drop))
    return O.expand_dims(y, tuple(new_axes)) if new_axes else y
