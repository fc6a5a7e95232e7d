"""``dense_chain`` layer by layer: each layer the backend's own ``matmul``, ``add`` and
activation kernels, so the values are those of the unfused graph. ``register(backend)`` adds it
to a backend's registry (numpy and cupy; numba inherits numpy's).

Only the numba backend asks for the rewrite that builds this op (``Backend.rewrites``); this
kernel is the reference its fast path is tested against and what runs the op anywhere else.
numba's own layer-by-layer path (the batches its loops do not serve) is ``by_layer`` with a
one-pass epilogue of its own.
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


def new_workspace(backend, out, params):
    """A workspace of its own, for a call made outside an executor (which plans one)."""
    return backend.empty((workspace_bytes([out.shape, None] + [p.shape for p in params],
                                          [out.dtype], {}),), np.uint8)


def by_layer(backend, out, x, params, activations, workspace, epilogue, blocks=None):
    """Each layer: the backend's ``matmul`` into its block, then ``epilogue(h, bias, act)``
    (the bias and activation, in place). ``blocks``: each layer's output array, when the
    caller keeps them (``hidden_blocks``)."""
    weights, a = params[0::2], x
    if blocks is None:
        if workspace is None:
            workspace = new_workspace(backend, out, params)
        blocks = hidden_blocks(workspace, x.shape[0], weights, out.dtype, out)
    for w, b, act, h in zip(weights, params[1::2], activations, blocks):
        backend.kernels["matmul"](h, a, w)
        epilogue(h, b, act)
        a = h


def register(backend):
    def kernel_epilogue(h, bias, act):
        backend.kernels["add"](h, h, bias)
        if act != "linear":
            backend.kernels[act](h, h if act in IN_PLACE else h.copy())

    @backend.register("dense_chain", scratch=workspace_bytes)
    def dense_chain(out, x, *params, activations, workspace=None, **_):
        by_layer(backend, out, x, params, activations, workspace, kernel_epilogue)
    return dense_chain
