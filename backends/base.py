"""``Backend``: what the executor needs from a device.

A backend is an array module (``xp``), a registry of kernels keyed by op name, and the few
operations that move data: allocate, copy in, copy out. A kernel gets its output buffer first,
then the input arrays, then the op's attributes as keywords, and writes into the buffer; an op
whose output is a view (``Op.view_of``) has a kernel that returns the view instead.
"""
import numpy as np


class Backend:
    name = "base"
    xp = np

    def __init__(self):
        self.kernels = {}

    def register(self, *names):
        """Decorator: ``@backend.register("add")`` makes the function the kernel for op "add"."""
        def decorate(fn):
            for name in names:
                self.kernels[name] = fn
            return fn
        return decorate

    def kernel(self, op):
        try:
            return self.kernels[op.name]
        except KeyError:
            raise NotImplementedError(
                f"backend {self.name!r} has no kernel for op {op.name!r} ({type(op).__name__})"
            ) from None

    def empty(self, shape, dtype):
        return self.xp.empty(shape, dtype)

    def asarray(self, array, dtype=None):
        return self.xp.asarray(array, dtype=dtype)

    def to_numpy(self, array):
        return np.asarray(array)

    def copy_into(self, dst, src):
        self.xp.copyto(dst, self.xp.asarray(src))

    def __repr__(self):
        return f"<Backend {self.name}>"
