"""``dense_chain`` layer by layer: each layer the backend's own ``matmul``, ``add`` and
activation kernels, so the values are those of the unfused graph. ``register(backend)`` adds it
to a backend's registry (numpy and cupy; numba inherits numpy's).

Only the numba backend asks for the rewrite that builds this op (``Backend.rewrites``); this
kernel is the reference its fast path is tested against, the path it takes for batches its
loops do not serve (float64, more than 64 rows), and what runs the op anywhere else.
"""
import numpy as np

ALIGN = 64                  # bytes: each hidden layer's block of the workspace starts on a line
IN_PLACE = {"relu", "tanh"}     # activation kernels that may write over their input (ufuncs);
                                # sigmoid's reads it again after writing its first branch


def hidden_offsets(rows, weight_shapes, itemsize):
    """Byte offsets of each hidden layer's (rows, n) block (all layers but the last), and the
    bytes in all."""
    offsets, total = [], 0
    for shape in weight_shapes[:-1]:
        offsets.append(total)
        total += -(-rows * shape[1] * itemsize // ALIGN) * ALIGN
    return offsets, total


def hidden_blocks(workspace, rows, weights, dtype, out):
    """Each layer's output array: blocks of ``workspace``, then ``out`` for the last layer."""
    dtype = np.dtype(dtype)
    offsets, _ = hidden_offsets(rows, [w.shape for w in weights], dtype.itemsize)
    return [workspace[o:o + rows * w.shape[1] * dtype.itemsize].view(dtype).reshape(
        rows, w.shape[1]) for o, w in zip(offsets, weights)] + [out]


def workspace_bytes(shapes, dtypes, attrs):
    return hidden_offsets(shapes[0][0], shapes[2::2], np.dtype(dtypes[0]).itemsize)[1]


def register(backend):
    @backend.register("dense_chain", scratch=workspace_bytes)
    def dense_chain(out, x, *params, activations, workspace=None, **_):
        weights = params[0::2]
        if workspace is None:
            workspace = backend.empty((workspace_bytes(
                [out.shape, x.shape] + [p.shape for p in params], [out.dtype], {}),), np.uint8)
        kernels, a = backend.kernels, x
        for w, b, act, h in zip(weights, params[1::2], activations,
                                hidden_blocks(workspace, x.shape[0], weights, out.dtype, out)):
            kernels["matmul"](h, a, w)
            kernels["add"](h, h, b)
            if act != "linear":
                kernels[act](h, h if act in IN_PLACE else h.copy())
            a = h
    return dense_chain
