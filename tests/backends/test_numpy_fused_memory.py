"""Fused elementwise programs on numpy run in bounded chunks in a planned workspace (project
issue #15): they used to keep an output-sized scratch buffer per step and node, which nearly
doubled the process's memory on an MLP. Resident-set growth against ``memory_report()`` is
measured in ``tests/graph/test_memory_truth.py``."""
import numpy as np
import pytest

from hiapi.backends.numpy_backend import fused_kernel
from hiapi.graph.ops import elementwise as E


def _program(dtype):
    """exp(x) * b + tanh(c) where x > b, else x; then relu, plus x: broadcasts along both
    axes, a bool step, in-place steps and a `where`."""
    return [(E.Exp(), (("input", 0),)), (E.Multiply(), (("step", 0), ("input", 1))),
            (E.Tanh(), (("input", 2),)), (E.Add(), (("step", 1), ("step", 2))),
            (E.Greater(), (("input", 0), ("input", 1))),
            (E.Where(), (("step", 4), ("step", 3), ("input", 0))),
            (E.Relu(), (("step", 5),)), (E.Add(), (("step", 6), ("input", 0)))], \
        [(None, dtype)] * 4 + [(None, np.bool_)] + [(None, dtype)] * 3


def _whole(x, b, c):
    """The program evaluated on whole arrays by numpy itself."""
    return np.maximum(np.where(x > b, np.exp(x) * b + np.tanh(c), x), 0) + x


@pytest.mark.parametrize("shape", [(), (7,), (300_001,), (1, 200_000), (3, 5, 70_001),
                                   (2, 3, 40_000, 3), (4096, 64)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_chunked_program_is_bit_identical_to_whole_arrays(shape, dtype):
    rng = np.random.default_rng(0)
    x = rng.normal(size=shape).astype(dtype)
    b = rng.normal(size=shape[-1:]).astype(dtype)                   # broadcast along rows
    c = rng.normal(size=shape[:1] + (1,) * (len(shape) - 1)).astype(dtype)   # along columns
    program, shapes = _program(dtype)
    out = np.empty(shape, dtype)
    fused_kernel.fused_elementwise(out, x, b, c, program=program, shapes=shapes, scratch={})
    assert out.tobytes() == _whole(x, b, c).tobytes()
    fused_kernel.fused_elementwise(x, x, b, c, program=program, shapes=shapes, scratch={})
    assert x.tobytes() == out.tobytes()                             # output aliasing an input


def test_temporaries_are_bounded_by_the_chunk_not_the_output():
    x = np.ones((4096, 1024), np.float32)
    program, shapes = _program(np.float32)
    scratch = {}
    fused_kernel.fused_elementwise(np.empty_like(x), x, x[0], x[:, :1], program=program,
                                   shapes=shapes, scratch=scratch)
    (plan,) = scratch.values()
    total = plan[-1]                            # workspace bytes the program asks for
    assert total <= len(program) * fused_kernel.CHUNK_BYTES < x.nbytes
    declared = fused_kernel.program_scratch([x.shape, x.shape, x[0].shape, x[:, :1].shape],
                                            [x.dtype] * 4, {"program": program,
                                                            "shapes": shapes})
    assert declared == total                    # what the memory plan reserves


def test_program_runs_in_its_workspace_and_allocates_nothing():
    import tracemalloc
    x = np.random.default_rng(0).normal(size=(512, 1024)).astype(np.float32)
    program, shapes = _program(np.float32)
    operands = (x, x[0], x[:, :1])
    attrs = {"program": program, "shapes": shapes}
    nbytes = fused_kernel.program_scratch([x.shape] + [a.shape for a in operands],
                                          [x.dtype] * 4, attrs)
    workspace, out, scratch = np.empty(nbytes, np.uint8), np.empty_like(x), {}
    fused_kernel.fused_elementwise(out, *operands, **attrs, scratch=scratch,
                                   workspace=workspace)         # plans once
    tracemalloc.start()
    try:
        fused_kernel.fused_elementwise(out, *operands, **attrs, scratch=scratch,
                                       workspace=workspace)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024, peak               # index tuples and views, no array data
    assert out.tobytes() == _whole(*operands).tobytes()
