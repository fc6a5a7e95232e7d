"""Kernels for the image-resampling ops (``hiapi.graph.ops.image``) and sin/cos, written
against an array module ``xp`` so the numpy and cupy backends share one copy (numba inherits
numpy's). ``register(backend)`` adds them to a backend's registry.

Sampling is planned once per call: for every output pixel, the flat input index, weight and
validity of each interpolation neighbour (1 for nearest, 4 for bilinear). Source points are
computed in the images' dtype, as Keras does, so ties in nearest rounding fall the same way
(0.9 * 5 is 4.5 in float32, not in float64); integer points stay exact either way.
"""


def _mirror(xp, index, size):
    """Keras's triangular wave: reflect about the centres of the edge pixels."""
    if size == 1:
        return xp.zeros_like(index)
    span = size - 1
    return xp.abs((index + span) % (2 * span) - span)


def _fix_index(xp, index, size, fill_mode):
    if fill_mode == "nearest":
        return xp.clip(index, 0, size - 1)
    if fill_mode == "constant":
        return index
    if xp.__name__ == "numpy":
        # integer modulo is the plan's slowest step and most neighbours are inside the image:
        # fold only the others (on a GPU, the branch would cost a device-to-host sync instead)
        outside = (index < 0) | (index >= size)
        index[outside] = _fold(xp, index[outside], size, fill_mode)
        return index
    return _fold(xp, index, size, fill_mode)


def _fold(xp, index, size, fill_mode):
    if fill_mode == "wrap":
        return index % size
    if fill_mode == "mirror":
        return _mirror(xp, index, size)
    return (_mirror(xp, 2 * index + 1, 2 * size + 1) - 1) // 2     # reflect: about the edges


def _axis_taps(xp, coord, size, interpolation, fill_mode):
    """(index, weight, valid) for each neighbour along one axis; out-of-range neighbours are
    invalid only in constant mode, where they read the fill value."""
    if interpolation == "nearest":
        # half away from zero, as JAX's map_coordinates and TensorFlow round (numpy's round
        # goes to even, which picks the other pixel on exact ties, common in flips/rotations)
        pairs = [(xp.sign(coord) * xp.floor(xp.abs(coord) + 0.5), xp.ones_like(coord))]
    else:
        low = xp.floor(coord)
        frac = coord - low
        pairs = [(low, 1.0 - frac), (low + 1.0, frac)]
    taps = []
    for index, weight in pairs:
        index = _fix_index(xp, index.astype(xp.int64), size, fill_mode)
        valid = (index >= 0) & (index < size)
        taps.append((xp.clip(index, 0, size - 1), weight, valid))
    return taps


def source_points(xp, transforms, batch, out_hw, dtype):
    """(rows, cols) in the input read by each output pixel, each of shape (n, oh, ow)."""
    oh, ow = out_hw
    t = xp.broadcast_to(transforms.astype(dtype), (batch, 8)).reshape(batch, 8, 1, 1)
    rows = xp.arange(oh, dtype=dtype).reshape(1, oh, 1)
    cols = xp.arange(ow, dtype=dtype).reshape(1, 1, ow)
    k = t[:, 6] * cols + t[:, 7] * rows + 1.0
    return (t[:, 3] * cols + t[:, 4] * rows + t[:, 5]) / k, \
        (t[:, 0] * cols + t[:, 1] * rows + t[:, 2]) / k


def _plan(xp, transforms, batch, in_hw, out_hw, interpolation, fill_mode, dtype):
    """[(flat input row index, weight, valid)] per neighbour, each of shape (n, oh, ow)."""
    h, w = in_hw
    y, x = source_points(xp, transforms, batch, out_hw, dtype)
    base = xp.arange(batch, dtype=xp.int64).reshape(batch, 1, 1) * (h * w)
    return [(base + iy * w + ix, wy * wx, vy & vx)
            for iy, wy, vy in _axis_taps(xp, y, h, interpolation, fill_mode)
            for ix, wx, vx in _axis_taps(xp, x, w, interpolation, fill_mode)]


def image_transform(xp):
    def kernel(out, images, transforms, output_hw, interpolation, fill_mode, fill_value):
        n, h, w, c = images.shape
        flat = images.reshape(n * h * w, c)
        out[...] = 0
        for index, weight, valid in _plan(xp, transforms, n, (h, w), output_hw,
                                          interpolation, fill_mode, out.dtype):
            out += xp.take(flat, index, axis=0) * (weight * valid).astype(out.dtype)[..., None]
            if fill_mode == "constant" and fill_value:
                out += (fill_value * weight * ~valid).astype(out.dtype)[..., None]
    return kernel


def _scatter_add(xp, target, index, values):
    add_at = getattr(xp.add, "at", None)
    if add_at is not None:
        add_at(target, index, values)
    else:                                   # older cupy
        import cupyx
        cupyx.scatter_add(target, index, values)


def image_transform_grad(xp):
    def kernel(out, g, transforms, input_hw, interpolation, fill_mode):
        n, oh, ow, c = g.shape
        h, w = input_hw
        total = xp.zeros((n * h * w, c), out.dtype)
        for index, weight, valid in _plan(xp, transforms, n, (h, w), (oh, ow),
                                          interpolation, fill_mode, out.dtype):
            _scatter_add(xp, total, index.reshape(-1),
                         (g * (weight * valid).astype(g.dtype)[..., None]).reshape(-1, c))
        out[...] = total.reshape(out.shape)
    return kernel


def register(backend):
    xp = backend.xp

    def sin(out, x):
        xp.sin(x, out=out)

    def cos(out, x):
        xp.cos(x, out=out)
    backend.register("sin")(sin)
    backend.register("cos")(cos)
    backend.register("image_transform")(image_transform(xp))
    backend.register("image_transform_grad")(image_transform_grad(xp))
