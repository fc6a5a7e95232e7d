"""``Backend``: what the executor needs from a device.

A backend is an array module (``xp``), a registry of kernels keyed by op name, and the few
operations that move data: allocate, copy in, copy out. A kernel gets its output buffer first,
then the input arrays, then the op's attributes as keywords, and writes into the buffer; an op
whose output is a view (``Op.view_of``) has a kernel that returns the view instead.

A kernel that needs a temporary (im2col columns, a fused program's chunk slots) registers how
many bytes it needs for given shapes (``scratch=``); the executor then plans that much space in
the memory arena for the op's step, as TFLite and XLA plan temporaries, and passes it as the
``workspace`` keyword (a uint8 array). So every byte a step uses is in the plan.
"""
import numpy as np


class Backend:
    name = "base"
    xp = np
    # the sizes the profiler measures this device's roofline with: a GEMM big enough to reach
    # the peak, a copy well past the caches
    roofline_gemm_size, roofline_copy_mb = 1024, 256
    # ops whose kernels run on float32 copies of 16-bit inputs (graph/passes/float32_kernels.py)
    float32_ops: frozenset = frozenset()
    # optional graph rewrites this backend asks for (``hiapi.graph.passes``: ``dense_chain``,
    # ``classification_totals``)
    rewrites: frozenset = frozenset()

    def __init__(self):
        self.kernels = {}
        self.scratch = {}

    def register(self, *names, scratch=None):
        """Decorator: ``@backend.register("add")`` makes the function the kernel for op "add".
        ``scratch(shapes, dtypes, attrs)``, given the output's then the inputs' shapes and
        dtypes and the op's attribute dict, returns the bytes of workspace the kernel needs; the
        kernel then takes a ``workspace`` keyword (None when called outside an executor)."""
        def decorate(fn):
            for name in names:
                self.kernels[name] = fn
                self.scratch.pop(name, None)        # an override declares its own
                if scratch is not None:
                    self.scratch[name] = scratch
            return fn
        return decorate

    def scratch_bytes(self, op, specs):
        """Workspace bytes the kernel of ``op`` needs when its output and inputs have these
        ``Spec``s (output first); 0 for kernels that need none."""
        declare = self.scratch.get(op.name)
        if declare is None:
            return 0
        return int(declare([s.shape for s in specs], [s.dtype for s in specs], op.attrs()))

    def kernel(self, op, specs=None):
        """The kernel of ``op``; with ``specs`` (the output's then the inputs' ``Spec``s, as
        the executor knows them when it compiles) the one for those dtypes, where a kernel
        names it (``for_specs``: chosen once per compile, not checked at every call)."""
        try:
            kernel = self.kernels[op.name]
        except KeyError:
            raise NotImplementedError(
                f"backend {self.name!r} has no kernel for op {op.name!r} ({type(op).__name__})"
            ) from None
        choose = getattr(kernel, "for_specs", None)
        return kernel if specs is None or choose is None else choose(specs)

    def empty(self, shape, dtype):
        return self.xp.empty(shape, dtype)

    def asarray(self, array, dtype=None):
        return self.xp.asarray(array, dtype=dtype)

    def to_numpy(self, array):
        return np.asarray(array)

    def copy_into(self, dst, src):
        self.xp.copyto(dst, self.xp.asarray(src))

    def step_replay(self, executable):
        """None, or an object that may run ``executable``'s steps as one recorded program
        (``run_steps(buffers)`` and ``commit(buffers)``, each True when it did the work): the
        cupy backend's CUDA graphs. Host backends run the step list as it is."""
        return None

    def synchronize(self):
        """Wait until every kernel queued so far has finished: a no-op where kernels run on
        the calling thread; device backends, whose kernels run asynchronously, override it so
        that host clocks time the work rather than its launch (the profiler)."""

    def __repr__(self):
        return f"<Backend {self.name}>"
