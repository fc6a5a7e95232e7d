"""Subnormal values flushed to zero in the numba backend's fused loops
(``backends/numba_backend/flush_denormals.py``): results and inputs below the smallest normal
float read as zero, normal values unchanged, and the register put back for numpy's own code."""
import numpy as np
import pytest

pytest.importorskip("numba", reason="the numba extra is not installed")

import hiapi  # noqa: E402
from hiapi.backends.numba_backend import flush_denormals  # noqa: E402
from hiapi.backends.numba_backend.registry import backend as numba_backend  # noqa: E402
from hiapi.graph.ops import elementwise  # noqa: E402

pytestmark = pytest.mark.skipif(not flush_denormals.SUPPORTED,
                                reason="flushing is implemented for x86's MXCSR only")
TINY = np.finfo(np.float32).tiny          # the smallest normal float32


def _halve(x):
    """``x * 0.5`` through the numba backend's fused-loop kernel."""
    program = ((elementwise.Multiply(), (("input", 0), ("input", 1))),)
    out = np.empty_like(x)
    numba_backend.kernels["fused_elementwise"](
        out, x, np.float32(0.5).reshape(()), program=program,
        shapes=((x.shape, x.dtype),), scratch={})
    return out


def test_subnormal_results_and_inputs_are_zero_normal_ones_exact():
    x = np.array([2 * TINY, TINY, TINY / 4, -TINY / 8, 1.0, -3.0, 0.0], np.float32)
    out = _halve(x)
    np.testing.assert_array_equal(out[:2], [TINY, 0.0])       # TINY / 2 is subnormal: 0
    np.testing.assert_array_equal(out[2:4], [0.0, 0.0])       # subnormal inputs read as 0
    np.testing.assert_array_equal(out[4:], [0.5, -1.5, 0.0])


def test_numpy_keeps_its_subnormals_after_a_loop():
    _halve(np.ones(8, np.float32))
    assert 0 < np.float32(TINY) * np.float32(0.5) < TINY


def test_adams_moment_of_a_weight_without_gradient_never_turns_subnormal():
    """An input that is always zero (MNIST's border pixels) gives its weights zero gradients:
    Adam's first moment decays by 0.9 a step and, unflushed, sticks at the smallest subnormal
    (1.4e-45) after ~800 steps, slowing every later step. Flushed, it stops at 0 or at a
    normal value (``m - 0.1 m`` with ``0.1 m`` flushed: ~1e-37)."""
    previous = hiapi.backends.get_backend().name
    hiapi.backends.set_backend("numba")
    try:
        hiapi.utils.set_random_seed(0)
        model = hiapi.Sequential([hiapi.Input((2,)), hiapi.layers.Dense(1, use_bias=False)])
        model.compile(optimizer="adam", loss="mse")
        rng = np.random.default_rng(0)
        x = np.stack([rng.standard_normal(8), np.zeros(8)], axis=1).astype(np.float32)
        model.train_on_batch(x, np.ones((8, 1), np.float32))
        momentum = next(v for v in model.optimizer.variables if "momentum" in v.name)
        momentum.assign(np.array([[1e-3], [1e-3]], np.float32))   # the dead input's too
        for _ in range(1000):
            model.train_on_batch(x, np.ones((8, 1), np.float32))
        value = momentum.numpy()[1, 0]
        assert value < 1e-30, "the moment did not decay: the test lost its point"
        assert value == 0.0 or value >= TINY, f"the dead input's moment is subnormal: {value!r}"
    finally:
        hiapi.backends.set_backend(previous)
