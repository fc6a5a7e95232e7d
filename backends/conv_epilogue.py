"""The ``conv2d_epilogue`` kernel (``hiapi.graph.ops.conv_epilogue``): a backend's own
``conv2d`` kernel run on the same few-image pieces that its im2col GEMM works in, each piece
given its bias and relu right after the GEMM wrote it, while it is still in cache. The separate
bias + relu loop it replaces reads and writes the whole output through memory.

``register(backend)`` wraps the ``conv2d`` kernel registered at that moment, so a backend
registers it after its own convolution (numba's, not the numpy one it inherits).
"""
import numpy as np

from hiapi.backends.numpy_backend.im2col import _per_chunk, geometry


def register(backend):
    conv2d, conv_scratch = backend.kernels["conv2d"], backend.scratch.get("conv2d")

    def conv2d_epilogue(out, x, w, b, strides, padding, dilation, groups, activation,
                        workspace=None):
        conv = dict(strides=strides, padding=padding, dilation=dilation, groups=groups)
        shape = geometry(x.shape, w.shape[:2], out.shape[1:3], strides, padding, dilation,
                         w.shape[2])
        per = _per_chunk(shape, shape.kh * shape.kw * shape.c, x.itemsize)
        for start in range(0, len(x), per):
            piece = out[start:start + per]
            conv2d(piece, x[start:start + per], w, workspace=workspace, **conv)
            np.add(piece, b, out=piece)
            if activation == "relu":
                np.maximum(piece, 0, out=piece)

    def scratch(shapes, dtypes, attrs):       # the convolution's: the epilogue needs none
        return 0 if conv_scratch is None else conv_scratch(shapes[:3], dtypes[:3], attrs)

    backend.register("conv2d_epilogue", scratch=scratch)(conv2d_epilogue)
