"""Winograd F(2x2, 3x3) convolution: the 3x3, stride-1 convolutions in 2.25x fewer multiplies.

Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks" (2015),
https://arxiv.org/abs/1509.09308; what NNPACK and oneDNN use for these shapes. The output is
cut into 2x2 tiles; tile ``t`` reads a 4x4 window ``d`` of the input (stride 2, so windows
overlap by 2) and, with ``g`` the 3x3 kernel of one (input, output) channel pair,

    y = A^T [ (G g G^T) ⊙ (B^T d B) ] A                 (4x4 products in place of 2x2x9)

Summed over input channels, the elementwise product becomes 16 independent GEMMs, one per
position (ξ, ν) of the 4x4 transformed tile:

    V[ξν] = (B^T d B)[ξν]   (tiles x C)        input transform, per piece of tiles
    U[ξν] = (G g G^T)[ξν]   (C x K)            kernel transform, once per call (16·C·K values)
    M[ξν] = V[ξν] @ U[ξν]   (tiles x K)        16 GEMMs on BLAS
    y     = A^T M A                             output transform, each tile's 2x2 outputs

so the GEMMs do 16·C·K multiply-adds per 2x2 outputs where direct or im2col convolution does
36·C·K. The input gradient is the same convolution of the output gradient with the kernel
turned by 180° and its channel axes swapped (padding 2 - pad, as for any stride-1 conv); the
filter gradient is the adjoint of the forward, ``dU[ξν] = V[ξν]^T @ (A dY A^T)[ξν]`` summed
over tiles, then ``dW = G^T dU G``. Transforms only add and halve (the matrices are 0, ±1
and ±1/2), so float64 results equal direct convolution to ~1e-13; in float32 the transforms'
sums of up to 9 terms add rounding of about 1e-6 relative to the output's scale
(tests/backends/test_winograd.py documents the tolerance).

Why here: on 2 cores OpenBLAS runs the im2col GEMMs of the benchmark CNNs' 32- and
64-filter layers at 56-97 GFLOP/s, and no GEMM tuning closes the gap to oneDNN's direct
convolutions; the 16 small GEMMs of a 256-tile piece ran at 90-110 GFLOP/s on the same core
(their operands stay in L2), so for the GEMMs alone a CIFAR 32x32x32 layer went from 11.8 to
4.4 ms on one thread. Figures: docs/performance.md.

How it runs: the tiles are taken a piece of whole tile rows at a time (``PIECE_BYTES`` of
transformed input and products, which stay in cache between the transform, the GEMM and the
inverse transform). Pieces depend on the shape only and run on the thread budget's
threads with single-threaded GEMMs (``backends/chunk_workers.py``), so the result is the same
bits on any thread count; the filter gradient sums its pieces in ``LANES`` fixed groups, each
in piece order, then the groups in order. The backend supplies the tile transforms (numpy
slices, or numba loops) as a ``Transforms``; ``register_winograd`` puts the three kernels in
front of a backend's im2col kernels for the shapes ``applies`` accepts.
"""
from collections import namedtuple
from functools import lru_cache

import numpy as np

from hiapi.runtime import environment, threads
from hiapi.backends.chunk_workers import workers
from hiapi.backends.workspace import aligned, take
from hiapi.backends import conv_geometry as geo

# Bytes of a piece's transformed input and products together (16 x tiles x (C + K) values).
# Measured on one core, OpenBLAS's 16 GEMMs of (T x C)(C x K) and (C x T)(T x K): 104-114
# GFLOP/s from 256 KiB to 1-1.5 MiB (C = K = 32 at 64-512 tiles; C = K = 64 at 64-128),
# 83-93 GFLOP/s from 2 MiB (the operands leave this EPYC's 512 KiB L2 and share the L3).
# On 2 threads whole ops ran 5-15 % faster with 1 MiB pieces than with 512 KiB (fewer
# hand-offs per op), so the larger end.
PIECE_BYTES = 1 << 20

# The filter gradient's pieces are summed in this many groups (each its own (16, C, K)
# accumulator), so up to LANES threads share the work and the sum's order is fixed by the
# shape alone.
LANES = 4

# Fewest input or output channels worth the transforms. Below it (the 1- and 3-channel first
# layers) the 16 GEMMs are too thin to pay for them: measured in docs/performance.md.
MIN_CHANNELS = 16

NAMES = ("conv2d", "conv2d_filter_grad", "conv2d_input_grad")

# Tiles: ``n`` images of ``th`` x ``tw`` tiles; tile (ti, tj) reads input rows from
# 2*ti - top and columns from 2*tj - left (zeros outside the ``h`` x ``w`` input) and writes
# output rows 2*ti, 2*ti + 1 and columns 2*tj, 2*tj + 1 that are inside ``oh`` x ``ow``.
Tiling = namedtuple("Tiling", "n h w top left oh ow th tw")


class Transforms(namedtuple("Transforms", "input_tiles output_tiles gradient_tiles spare_bytes")):
    """A backend's tile transforms, each for the tile rows ``rows`` = (first, stop) of a
    ``Tiling`` (rows counted over the batch, ``n * th`` in all):

    - ``input_tiles(x, grid, rows, V, spare)``: ``V`` (16, tiles, C) = B^T d B of each tile;
    - ``output_tiles(M, grid, rows, out, spare)``: the tiles' A^T m A into ``out`` (N, OH, OW,
      K), the outputs inside it only;
    - ``gradient_tiles(g, grid, rows, D, spare)``: ``D`` (16, tiles, K) = A g A^T of each tile
      of the output gradient (zero outside it);
    - ``spare_bytes(grid, rows, channels, itemsize)``: the transforms' own temporary for a
      piece of ``rows`` tile rows of ``channels`` channels (0 for loops that need none).
    """


def applies(kernel_hw, strides, dilation, groups, channels):
    """Whether Winograd F(2x2, 3x3) runs this convolution: 3x3, stride 1, no dilation, one
    group, and at least ``MIN_CHANNELS`` input and output channels (``channels``, the
    smaller); never with ``HIAPI_WINOGRAD=0``."""
    return (environment.winograd() and tuple(kernel_hw) == (3, 3) and tuple(strides) == (1, 1)
            and tuple(dilation) == (1, 1) and groups == 1 and channels >= MIN_CHANNELS)


def tiling(input_shape, out_hw, top, left):
    n, h, w = input_shape[:3]
    oh, ow = out_hw
    return Tiling(n, h, w, top, left, oh, ow, -(-oh // 2), -(-ow // 2))


def forward_tiling(input_shape, out_hw, padding):
    """The forward's tiles (and the filter gradient's): the input padded as the op says."""
    (top, _), (left, _) = [geo.pads(size, 3, 1, 1, padding) for size in input_shape[1:3]]
    return tiling(input_shape, out_hw, top, left)


def input_grad_tiling(g_shape, input_hw, padding):
    """The input gradient's tiles: a convolution of the output gradient with padding
    2 - (the forward's), whose output is the input's size."""
    (top, _), (left, _) = [geo.pads(size, 3, 1, 1, padding) for size in input_hw]
    return tiling(g_shape, input_hw, 2 - top, 2 - left)


def pieces(grid, channels, filters, itemsize):
    """(first, stop) tile rows of each piece: about PIECE_BYTES of transformed tiles and
    products, at least one row. Depends on the shape only (the thread count never changes a
    result)."""
    tiles = PIECE_BYTES // (16 * (channels + filters) * itemsize)
    rows = max(1, tiles // grid.tw)
    total = grid.n * grid.th
    return [(r, min(r + rows, total)) for r in range(0, total, rows)]


# ---- kernel transforms (16·C·K values: a few microseconds, in the workspace) -------------

def kernel_transform(w, U, half):
    """``U`` (4, 4, C, K) = G w G^T of the (3, 3, C, K) kernel, with ``half`` a (4, 3, C, K)
    temporary. G = [[1, 0, 0], [1/2, 1/2, 1/2], [1/2, -1/2, 1/2], [0, 0, 1]]."""
    _g_rows(w, half)
    for i in range(4):
        _g_rows(half[i], U[i])


def _g_rows(g, out):
    """out (4, ...) = G @ g (3, ...) along the first axis."""
    np.add(g[0], g[2], out=out[1])
    np.subtract(out[1], g[1], out=out[2])
    out[1] += g[1]
    out[1:3] *= 0.5
    out[0] = g[0]
    out[3] = g[2]


def kernel_adjoint(dU, out, half):
    """``out`` (3, 3, C, K) = G^T dU G of the (4, 4, C, K) gradient; ``half`` (3, 4, C, K)."""
    _gt_rows(dU, half)
    for i in range(3):
        _gt_rows(half[i], out[i])


def _gt_rows(u, out):
    """out (3, ...) = G^T @ u (4, ...) along the first axis."""
    np.add(u[1], u[2], out=out[0])
    out[0] *= 0.5
    np.add(out[0], u[3], out=out[2])
    out[0] += u[0]
    np.subtract(u[1], u[2], out=out[1])
    out[1] *= 0.5


# ---- workspace layouts --------------------------------------------------------------------

class Layout:
    """Where a Winograd kernel's temporaries sit in its workspace: ``head`` (the transformed
    kernel and the transform's temporary, and the filter gradient's lane accumulators), then
    one slot per thread (a piece's transformed input, its products or transformed gradient,
    the transforms' spare; the filter gradient's per-piece product too)."""

    def __init__(self, grid, channels, filters, itemsize, transforms, kind):
        self.pieces = pieces(grid, channels, filters, itemsize)
        most = max(stop - first for first, stop in self.pieces)
        tiles = most * grid.tw
        c, k = channels, filters
        self.kernel_bytes = aligned(16 * c * k * itemsize)
        self.half_bytes = aligned(12 * c * k * itemsize)
        self.lanes = min(LANES, len(self.pieces)) if kind == "filter" else 0
        # the filter gradient's pieces, by the lane that adds them up
        self.lane_pieces = np.array_split(np.arange(len(self.pieces)), self.lanes) \
            if self.lanes else []
        # forward: U then G's temporary; filter gradient: G^T's temporary then the lane sums
        self.sums_at = self.half_bytes
        self.head = (self.sums_at + self.lanes * self.kernel_bytes if kind == "filter"
                     else self.kernel_bytes + self.half_bytes)
        spare_channels = max(c, k)
        self.v_bytes = aligned(16 * tiles * c * itemsize)
        self.m_bytes = aligned(16 * tiles * k * itemsize)
        self.spare_at = self.v_bytes + self.m_bytes
        self.product_at = self.spare_at + aligned(
            transforms.spare_bytes(grid, most, spare_channels, itemsize))
        self.slot = self.product_at + (self.kernel_bytes if kind == "filter" else 0)

    def nbytes(self, slots):
        return self.head + slots * self.slot

    def planned_slots(self):
        tasks = self.lanes or len(self.pieces)
        return max(1, min(threads.num_threads(), tasks))

    def slots_in(self, workspace):
        """Slots the workspace holds: as planned, or fewer if the budget grew since."""
        if workspace is None:
            return self.planned_slots()
        return max(1, min(self.planned_slots(), (workspace.nbytes - self.head) // self.slot))

    def slot_array(self, workspace, slot, at, shape, dtype):
        return take(workspace, shape, dtype, self.head + slot * self.slot + at)

    def spare(self, workspace, slot):
        if workspace is None:
            return None
        start = self.head + slot * self.slot
        return workspace[start + self.spare_at:start + self.product_at]


@lru_cache(maxsize=256)
def layout(grid, channels, filters, itemsize, transforms, kind):
    """``Layout`` per geometry, worked out once: building it took 14-18 us, on every call of
    every convolution of every step (as ``im2col._cached_layout``)."""
    return Layout(grid, channels, filters, itemsize, transforms, kind)


# ---- the three kernels --------------------------------------------------------------------

def winograd_kernels(transforms):
    """conv2d, conv2d_filter_grad and conv2d_input_grad by Winograd F(2x2, 3x3), with the
    backend's tile ``transforms``; only for the shapes ``applies`` accepts."""

    def convolve(out, x, w, grid, workspace):
        """out = x (*) w on the tiles of ``grid``; w (3, 3, C, K) as in the forward."""
        c, k = w.shape[2], w.shape[3]
        at = layout(grid, c, k, x.itemsize, transforms, "forward")
        U = take(workspace, (4, 4, c, k), x.dtype)
        kernel_transform(w, U, take(workspace, (4, 3, c, k), x.dtype, at.kernel_bytes))
        U = U.reshape(16, c, k)

        def job(rows, slot):
            tiles = (rows[1] - rows[0]) * grid.tw
            V = at.slot_array(workspace, slot, 0, (16, tiles, c), x.dtype)
            M = at.slot_array(workspace, slot, at.v_bytes, (16, tiles, k), x.dtype)
            spare = at.spare(workspace, slot)
            transforms.input_tiles(x, grid, rows, V, spare)
            np.matmul(V, U, out=M)
            transforms.output_tiles(M, grid, rows, out, spare)
        workers.run(at.pieces, job, workers.count(len(at.pieces), at.slots_in(workspace)))

    def conv2d(out, x, w, strides, padding, dilation, groups, workspace=None):
        convolve(out, x, w, forward_tiling(x.shape, out.shape[1:3], padding), workspace)

    def conv2d_input_grad(out, g, w, input_hw, strides, padding, dilation, groups,
                          workspace=None):
        turned = w[::-1, ::-1].transpose(0, 1, 3, 2)        # a view: read once, by U
        convolve(out, g, turned, input_grad_tiling(g.shape, input_hw, padding), workspace)

    def conv2d_filter_grad(out, x, g, kernel_hw, strides, padding, dilation, groups,
                           workspace=None):
        c, k = out.shape[2], out.shape[3]
        grid = forward_tiling(x.shape, g.shape[1:3], padding)
        at = layout(grid, c, k, x.itemsize, transforms, "filter")
        lanes = at.lane_pieces
        sums = take(workspace, (at.lanes, 16, c, k), x.dtype, at.sums_at)

        def job(lane, slot):
            for n, index in enumerate(lanes[lane]):
                rows = at.pieces[index]
                tiles = (rows[1] - rows[0]) * grid.tw
                V = at.slot_array(workspace, slot, 0, (16, tiles, c), x.dtype)
                D = at.slot_array(workspace, slot, at.v_bytes, (16, tiles, k), x.dtype)
                spare = at.spare(workspace, slot)
                transforms.input_tiles(x, grid, rows, V, spare)
                transforms.gradient_tiles(g, grid, rows, D, spare)
                if n == 0:
                    np.matmul(V.transpose(0, 2, 1), D, out=sums[lane])
                else:
                    product = at.slot_array(workspace, slot, at.product_at, (16, c, k),
                                            x.dtype)
                    np.matmul(V.transpose(0, 2, 1), D, out=product)
                    sums[lane] += product
        workers.run(list(range(at.lanes)), job, workers.count(at.lanes,
                                                              at.slots_in(workspace)))
        for lane in range(1, at.lanes):
            sums[0] += sums[lane]
        kernel_adjoint(sums[0].reshape(4, 4, c, k), out, take(workspace, (3, 4, c, k), x.dtype))

    return conv2d, conv2d_filter_grad, conv2d_input_grad


def winograd_scratch(transforms):
    """The three kernels' ``scratch(shapes, dtypes, attrs)`` declarations."""

    def conv2d(shapes, dtypes, attrs):
        out, x, w = shapes
        grid = forward_tiling(x, out[1:3], attrs["padding"])
        return _declared(grid, w[2], w[3], dtypes[0], "forward")

    def conv2d_filter_grad(shapes, dtypes, attrs):
        out, x, g = shapes
        grid = forward_tiling(x, g[1:3], attrs["padding"])
        return _declared(grid, out[2], out[3], dtypes[0], "filter")

    def conv2d_input_grad(shapes, dtypes, attrs):
        out, g, w = shapes
        grid = input_grad_tiling(g, out[1:3], attrs["padding"])
        return _declared(grid, w[3], w[2], dtypes[0], "forward")

    def _declared(grid, channels, filters, dtype, kind):
        at = Layout(grid, channels, filters, np.dtype(dtype).itemsize, transforms, kind)
        return at.nbytes(at.planned_slots())

    return conv2d, conv2d_filter_grad, conv2d_input_grad


# ---- choosing per shape -------------------------------------------------------------------

def _forward_applies(out, x, w, strides, padding, dilation, groups, **_):
    return applies(w.shape[:2], strides, dilation, groups, min(w.shape[2:]))


def _filter_grad_applies(out, x, g, kernel_hw, strides, padding, dilation, groups, **_):
    return applies(kernel_hw, strides, dilation, groups, min(out.shape[2:]))


def _input_grad_applies(out, g, w, input_hw, strides, padding, dilation, groups, **_):
    return applies(w.shape[:2], strides, dilation, groups, min(w.shape[2:]))


def _declared_applies(name, shapes, attrs):
    kernel = shapes[0] if name == "conv2d_filter_grad" else shapes[2]
    kernel_hw = attrs["kernel_hw"] if name == "conv2d_filter_grad" else kernel[:2]
    return applies(kernel_hw, attrs["strides"], attrs["dilation"], attrs["groups"],
                   min(kernel[2:]))


_ARGUMENTS = {"conv2d": _forward_applies, "conv2d_filter_grad": _filter_grad_applies,
              "conv2d_input_grad": _input_grad_applies}


def register_winograd(backend, transforms):
    """Put the Winograd kernels in front of ``backend``'s registered convolution kernels (its
    im2col ones): each op runs Winograd for the shapes ``applies`` accepts and the kernel
    registered before for the others, and declares that kernel's scratch."""
    for name, fast, fast_scratch in zip(NAMES, winograd_kernels(transforms),
                                        winograd_scratch(transforms)):
        backend.register(name, scratch=_choose_scratch(name, fast_scratch,
                                                       backend.scratch.get(name)))(
            _choose_kernel(_ARGUMENTS[name], fast, backend.kernels[name]))


def _choose_kernel(chosen, fast, other):
    def kernel(*args, **kwargs):
        return (fast if chosen(*args, **kwargs) else other)(*args, **kwargs)
    kernel.__name__ = fast.__name__
    kernel.__doc__ = f"Winograd F(2x2, 3x3) where it applies, else {other.__qualname__}."
    return kernel


def _choose_scratch(name, fast, other):
    def declare(shapes, dtypes, attrs):
        if _declared_applies(name, shapes, attrs):
            return fast(shapes, dtypes, attrs)
        return other(shapes, dtypes, attrs) if other is not None else 0
    return declare
