"""The numpy backend keeps no memory outside its plan: a training step's resident-set growth
stays near the arena that ``memory_report()`` states (project issue #15). Fused elementwise
programs used to keep an output-sized scratch buffer per step and node, which nearly doubled
the process's memory on an MLP; they now run in bounded chunks."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hiapi.backends.numpy_backend import fused_kernel
from hiapi.graph.ops import elementwise as E

WORKER = Path(__file__).with_name("fused_memory_worker.py")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm and "
                    "relies on glibc's MALLOC_MMAP_THRESHOLD_ to return freed buffers")
@pytest.mark.parametrize("memory", ["default", "sublinear"])
def test_mlp_step_resident_growth_matches_memory_report(memory):
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": str(1 << 20), "OMP_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, str(WORKER), memory, "6", "1024", "1024"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    arena, growth = result["arena_bytes"], result["rss_growth_bytes"]
    assert abs(growth - arena) <= 0.25 * arena, \
        f"{memory}: resident set grew {growth / 2**20:.1f} MiB, memory_report() " \
        f"says {arena / 2**20:.1f} MiB"


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
