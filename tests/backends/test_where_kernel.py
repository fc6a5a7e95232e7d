"""numpy's ``where`` kernel selects a zero branch by bits (the ReLU gradient ``where(y > 0, g,
0)``): the same bits as ``np.where`` for NaN, infinities and signed zeros, in place or not,
alone or inside a chunked fused program, in its planned workspace."""
import tracemalloc

import numpy as np
import pytest

from hiapi.backends.numpy_backend import fused_kernel, where_kernel
from hiapi.graph.ops import elementwise as E


def _gradient(shape, dtype, seed=0):
    """Normal values with every kind of special float sprinkled in."""
    rng = np.random.default_rng(seed)
    g = rng.normal(size=shape).astype(dtype)
    for step, value in ((7, np.inf), (11, np.nan), (13, -0.0), (17, -np.inf), (19, 0.0)):
        g.reshape(-1)[::step] = value
    return g, rng.random(shape) > 0.5


def _bits(x):
    return x.tobytes()


@pytest.mark.parametrize("shape", [(), (7,), (300, 1024), (3, 70_001)])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_zero_branch_is_np_where_bit_for_bit(shape, dtype):
    g, cond = _gradient(shape, dtype)
    zero = np.zeros((), dtype)
    for args in ((cond, g, zero), (cond, zero, g)):
        out = np.full(shape, 5, dtype)
        where_kernel.where(out, *args)
        assert _bits(out) == _bits(np.where(*args))
    in_place = g.copy()
    where_kernel.where(in_place, cond, in_place, zero)           # the output is g's buffer
    assert _bits(in_place) == _bits(np.where(cond, g, zero))


def test_other_branches_take_the_general_path():
    g, cond = _gradient((64, 33), np.float32)
    for b in (np.float32(-0.0), np.float32(2.5), np.zeros(33, np.float32) + 1):
        out = np.empty_like(g)
        where_kernel.where(out, cond, g, b)
        assert _bits(out) == _bits(np.where(cond, g, b))
    ints = np.arange(64 * 33).reshape(64, 33)
    out = np.empty_like(ints)
    where_kernel.where(out, cond, ints, np.zeros((), ints.dtype))
    assert (out == np.where(cond, ints, 0)).all()


def test_scratch_is_declared_only_where_the_select_applies():
    f32, b = np.float32, np.dtype(bool)
    shape = (256, 1024)
    assert where_kernel.select_scratch([shape, shape, shape, ()], [f32, b, f32, f32], {}) == \
        where_kernel.PIECE_BYTES                                # pieces, not the output
    assert where_kernel.select_scratch([(5,), (5,), (), (5,)], [f32, b, f32, f32], {}) == 64
    assert where_kernel.select_scratch([shape, shape, shape, shape], [f32, b, f32, f32],
                                       {}) == 0                 # no scalar branch
    assert where_kernel.select_scratch([shape, (1024,), shape, ()], [f32, b, f32, f32],
                                       {}) == 0                 # a broadcast condition
    assert where_kernel.select_scratch([shape, shape, shape, ()], [np.int32, b, np.int32,
                                                                   np.int32], {}) == 0


def test_relu_gradient_program_runs_in_its_workspace_bit_for_bit():
    """The fused ``where(y > 0, g, 0)`` gets the mask's piece in the program's workspace and
    allocates nothing per call."""
    g, _ = _gradient((512, 1024), np.float32)
    y = np.maximum(np.random.default_rng(1).normal(size=g.shape), 0).astype(np.float32)
    zero = np.zeros((), np.float32)
    program = [(E.Greater(), (("input", 0), ("input", 1))),
               (E.Where(), (("step", 0), ("input", 2), ("input", 1)))]
    attrs = {"program": program, "shapes": [(None, np.bool_), (None, np.float32)]}
    nbytes = fused_kernel.program_scratch([g.shape, y.shape, (), g.shape],
                                          [np.float32, np.float32, np.float32, np.float32],
                                          attrs)
    assert nbytes >= fused_kernel.CHUNK_BYTES // 4 + fused_kernel.CHUNK_BYTES   # bool + mask
    workspace, out, scratch = np.empty(nbytes, np.uint8), np.empty_like(g), {}
    fused_kernel.fused_elementwise(out, y, zero, g, **attrs, scratch=scratch,
                                   workspace=workspace)          # plans once
    tracemalloc.start()
    try:
        fused_kernel.fused_elementwise(out, y, zero, g, **attrs, scratch=scratch,
                                       workspace=workspace)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024, peak
    assert _bits(out) == _bits(np.where(y > 0, g, zero))
    fused_kernel.fused_elementwise(g, y, zero, g, **attrs, scratch=scratch,
                                   workspace=workspace)          # in place over g
    assert _bits(g) == _bits(out)
