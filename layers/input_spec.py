"""``InputSpec``: what a built layer accepts, checked on every call so a wrong shape fails at the
layer that cannot take it, with the layer's name, not deep inside a kernel."""


class InputSpec:
    def __init__(self, ndim=None, min_ndim=None, axes=None, dtype=None):
        self.ndim, self.min_ndim, self.axes, self.dtype = ndim, min_ndim, dict(axes or {}), dtype

    def check(self, layer, index, shape):
        problem = None
        if self.ndim is not None and len(shape) != self.ndim:
            problem = f"expected rank {self.ndim}"
        elif self.min_ndim is not None and len(shape) < self.min_ndim:
            problem = f"expected rank >= {self.min_ndim}"
        else:
            for axis, size in self.axes.items():
                got = shape[axis] if -len(shape) <= axis < len(shape) else None
                if got is not None and size is not None and got != size:
                    problem = f"expected axis {axis} to have size {size}"
                    break
        if problem:
            shape_text = "(" + ", ".join("None" if d is None else str(d) for d in shape) + \
                ("," if len(shape) == 1 else "") + ")"
            raise ValueError(f"Input {index} of layer {layer.name!r} ({type(layer).__name__}) "
                             f"is incompatible: {problem}, got shape {shape_text}")
