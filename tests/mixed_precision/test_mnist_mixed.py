"""The MNIST convnet under each policy from one seed, at a size a test can afford: the
accuracies agree (the full-size comparison, 0.3 points, is benchmarks/mixed_precision.py), the
planned activations of the 16-bit runs are below float32's, and it runs on the numba backend
too (whose kernels hand 16-bit values to numpy's)."""
import importlib.util
from pathlib import Path

import numpy as np
import pytest

import hiapi
from hiapi.graph.memory.report import memory_rows
from hiapi.runtime.dtypes import BFLOAT16

BENCHMARK = Path(__file__).parents[2] / "benchmarks" / "mixed_precision.py"
# bfloat16 needs the ml_dtypes package (the bfloat16 extra), and a backend with bfloat16 arrays
# (cupy has none, docs/gpu.md)
LOW = ("mixed_float16",) + (("mixed_bfloat16",) if BFLOAT16 is not None and
                            hiapi.backends.get_backend().name != "cupy" else ())


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("mixed_precision_bench", BENCHMARK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_policies_reach_float32_accuracy(bench):
    results = {policy: bench.train_and_test(policy, epochs=1, train_samples=2048,
                                            batch_size=32, test_samples=2000)
               for policy in ("float32",) + LOW}
    base = results["float32"][1]
    print({policy: result[1] for policy, result in results.items()})
    assert base > 0.7
    for policy in LOW:
        # 1.5 points at this size (2,048 images, one epoch): two runs' rounding differs
        assert abs(results[policy][1] - base) < 0.015, (policy, results[policy][1], base)
    assert isinstance(results["mixed_float16"][0].optimizer,
                      hiapi.optimizers.LossScaleOptimizer)
    rows = {}
    for policy, (model, _, _) in results.items():
        step = [f for key, f in model._step_functions.items() if key[0] == "train"][-1]
        executable = list(step._executables.values())[-1]
        rows[policy] = memory_rows(executable, model)
    for policy in LOW:
        assert rows[policy]["activations"] < 0.7 * rows["float32"]["activations"]


def test_numba_backend_runs_sixteen_bits(bench):
    pytest.importorskip("numba")
    previous = hiapi.backends.get_backend().name
    hiapi.backends.set_backend("numba")
    try:
        for policy in LOW:
            hiapi.mixed_precision.set_global_policy(policy)
            model = bench.build_model()
            model.compile(loss="sparse_categorical_crossentropy", optimizer="adam")
            x = np.random.default_rng(0).random((8, 28, 28, 1), dtype=np.float32)
            before = model.get_weights()
            losses = [model.train_on_batch(x, np.arange(8)) for _ in range(3)]
            assert np.all(np.isfinite(losses))
            assert all(w.dtype == np.float32 for w in model.get_weights())
            assert not np.array_equal(before[0], model.get_weights()[0])
    finally:
        hiapi.backends.set_backend(previous)
