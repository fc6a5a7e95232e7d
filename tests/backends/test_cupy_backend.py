"""The cupy backend.

Everywhere: choosing it without cupy names the extra to install, choosing it without a GPU says
so and names the CPU backends, and the op table below exercises every kernel numpy registers.
With cupy and an NVIDIA GPU: every op (forward and gradients, each kernel on its own and fused)
against the numpy reference, dropout masks equal to the CPU's for the same seed, MNIST training
to the same accuracy, and (with two GPUs) NCCL collectives under a real ``mpiexec -n 2``.

Tolerances (float32): rtol 1e-5 for elementwise maths and small reductions (GPU exp/log/tanh
are within a few ulp of the host's, and reductions add in a different order); rtol 1e-4 where a
GEMM is involved (matmul, convolution: cuBLAS blocks the sums differently). Integer and boolean
results, one-hot rows and random numbers must be equal.
"""
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import hiapi
from hiapi import backends, config, layers
from hiapi.graph import Function, grad, ops, placeholder
from hiapi.graph.ops.array import ConcatPiece
from hiapi.graph.ops.custom_gradient import CustomGradient
from hiapi.graph.ops.nn import IntegralIndices
from hiapi.graph.passes.classification_totals import ArgmaxHits, SparseCrossEntropyTotal
from hiapi.graph.passes.dense_chain import DenseChain
from hiapi.graph.ops.sort import argsort
from hiapi.graph.ops.reduce import SumLike
from hiapi.graph.schedule import topological_order

if __name__ == "__main__":        # run by mpiexec as the NCCL worker: no conftest sets the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "graph"))
from test_ops_nn_gradients import CONVS, POOLS  # noqa: E402  (the shapes the op tests check)


def gpu_count():
    """CUDA devices cupy can see: 0 when cupy is missing or no GPU / driver is visible."""
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount()
    except Exception:           # ImportError, or CUDARuntimeError without a driver or device
        return 0


CUPY_INSTALLED = importlib.util.find_spec("cupy") is not None
GPUS = gpu_count()
needs_gpu = pytest.mark.skipif(GPUS == 0, reason="needs cupy and a visible NVIDIA GPU")


@pytest.fixture
def restore_backend():
    name = backends.get_backend().name
    yield
    backends.set_backend(name)


# ------------------------------------------------------------------ selection, everywhere


def test_cupy_is_registered_with_its_extra():
    assert backends.AVAILABLE["cupy"] == ("hiapi.backends.cupy_backend", "cupy")


@pytest.mark.skipif(CUPY_INSTALLED, reason="cupy is installed")
def test_without_cupy_the_error_names_the_extra(restore_backend):
    before = backends.get_backend()
    with pytest.raises(ImportError, match=r"backend 'cupy' needs a package that is not "
                                          r"installed .*pip install 'hiapi\[cupy\]'"):
        backends.set_backend("cupy")
    assert backends.get_backend() is before


@pytest.mark.skipif(CUPY_INSTALLED, reason="cupy is installed")
def test_without_cupy_the_environment_variable_fails_naming_the_extra():
    result = subprocess.run([sys.executable, "-c", "import hiapi; hiapi.backends.get_backend()"],
                            env={**os.environ, "HIAPI_BACKEND": "cupy"}, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode != 0
    assert "pip install 'hiapi[cupy]'" in result.stderr


@pytest.mark.skipif(not CUPY_INSTALLED or GPUS > 0, reason="needs cupy without a GPU")
def test_without_a_gpu_the_error_names_the_cpu_backends(restore_backend):
    before = backends.get_backend()
    with pytest.raises(RuntimeError, match=r"no NVIDIA GPU / CUDA driver is visible.*"
                                           r"HIAPI_BACKEND=numpy or HIAPI_BACKEND=numba"):
        backends.set_backend("cupy")
    assert backends.get_backend() is before


def test_nccl_is_chosen_only_for_mpi_on_the_gpu():
    from hiapi.distribute.communicator import LocalCommunicator
    from hiapi.distribute.nccl import for_backend
    local = LocalCommunicator()
    assert for_backend(local, "cupy") is local          # one process: nothing to reduce
    assert for_backend(local, "numpy") is local


def test_the_gpu_collectives_switch_is_checked(monkeypatch):
    from hiapi.distribute.nccl import gpu_collectives
    assert gpu_collectives() == "auto"
    monkeypatch.setenv("HIAPI_GPU_COLLECTIVES", "Host")
    assert gpu_collectives() == "host"
    monkeypatch.setenv("HIAPI_GPU_COLLECTIVES", "mpi")
    with pytest.raises(ValueError, match="HIAPI_GPU_COLLECTIVES must be 'auto', 'nccl' or "
                                         "'host'; got 'mpi'"):
        gpu_collectives()


def test_the_cuda_graphs_switch_is_checked(monkeypatch):
    from hiapi.runtime import environment
    monkeypatch.delenv("HIAPI_CUDA_GRAPHS", raising=False)
    assert environment.cuda_graphs()                # recorded steps are the default
    monkeypatch.setenv("HIAPI_CUDA_GRAPHS", "0")
    assert not environment.cuda_graphs()
    monkeypatch.setenv("HIAPI_CUDA_GRAPHS", "yes")
    with pytest.raises(ValueError, match="HIAPI_CUDA_GRAPHS must be '1' or '0', got 'yes'"):
        environment.cuda_graphs()


def test_host_backends_run_the_step_list_unrecorded(restore_backend):
    """Only a device backend records steps (``Backend.step_replay``); on the CPU backends the
    executor's own loop runs every step."""
    for name in ("numpy", "numba"):
        backends.set_backend(name)
        x = placeholder((None, 3))
        f = Function([x], ops.sum(x * 2.0))
        assert float(f(np.ones((2, 3), np.float32))) == 12.0
        executable, = f._executables.values()
        assert executable.backend.name == name and executable.replay is None


@needs_gpu
def test_gradient_compression_on_cupy_is_refused_with_the_reason(restore_backend):
    from hiapi.distribute import Strategy
    from hiapi.distribute.communicator import LocalCommunicator
    backends.set_backend("cupy")
    with pytest.raises(NotImplementedError, match="not supported on the cupy backend"):
        Strategy(compression="topk", communicator=LocalCommunicator())


# ------------------------------------------------------------------ the op table

RNG = np.random.default_rng(2024)
ELEMENTWISE = dict(rtol=1e-5, atol=1e-6)
GEMM = dict(rtol=1e-4, atol=1e-5)
EXACT = dict(rtol=0, atol=0)


def f32(*shape, low=-2.0, high=2.0):
    return RNG.uniform(low, high, shape).astype(np.float32)


def off_zero(*shape):
    """|x| in [0.2, 1.5]: no value at the kink of relu/abs."""
    return (RNG.choice([-1.0, 1.0], shape) * RNG.uniform(0.2, 1.5, shape)).astype(np.float32)


def distinct(*shape):
    """Distinct values 0.25 apart, shuffled: no ties for max, argmax and max pooling."""
    n = int(np.prod(shape))
    return (RNG.permutation(n) * 0.25 - 0.125 * n).reshape(shape).astype(np.float32)


def grid(*shape):
    """Small integers as float32: many exact ties, to check comparisons on equal values."""
    return RNG.integers(-2, 3, shape).astype(np.float32)


def soft_labels(rows, classes):
    p = RNG.uniform(0.1, 1.0, (rows, classes))
    return (p / p.sum(-1, keepdims=True)).astype(np.float32)


def _binary(name):
    return lambda a, b: getattr(ops, name)(a, b)


# (id, build(*placeholders), input arrays, tolerance)
CASES = [
    ("negative", ops.negative, [f32(4, 5)], ELEMENTWISE),
    ("exp", ops.exp, [f32(4, 5)], ELEMENTWISE),
    ("log", ops.log, [f32(4, 5, low=0.5, high=3.0)], ELEMENTWISE),
    ("sqrt", ops.sqrt, [f32(4, 5, low=0.5, high=3.0)], ELEMENTWISE),
    ("tanh", ops.tanh, [f32(4, 5)], ELEMENTWISE),
    ("sigmoid", ops.sigmoid, [f32(4, 5, low=-30.0, high=30.0)], ELEMENTWISE),
    ("relu", ops.relu, [off_zero(4, 5)], ELEMENTWISE),
    ("abs", ops.abs, [off_zero(4, 5)], ELEMENTWISE),
    ("add_broadcast", ops.add, [f32(4, 5), f32(5)], ELEMENTWISE),
    ("subtract_broadcast", ops.subtract, [f32(4, 5), f32(4, 1)], ELEMENTWISE),
    ("multiply", ops.multiply, [f32(4, 5), f32(4, 5)], ELEMENTWISE),
    ("divide", ops.divide, [f32(4, 5), f32(5, low=0.5, high=2.0)], ELEMENTWISE),
    ("power", ops.power, [f32(4, 5, low=0.5, high=2.0), f32(4, 5, low=-1.5, high=1.5)],
     ELEMENTWISE),
    ("maximum", ops.maximum, [f32(4, 5), f32(4, 5)], ELEMENTWISE),
    ("minimum", ops.minimum, [f32(4, 5), f32(4, 5)], ELEMENTWISE),
    *[(name, _binary(name), [grid(4, 5), grid(5)], EXACT) for name in
      ("greater", "greater_equal", "less", "less_equal", "equal", "not_equal")],
    ("where", lambda c, a, b: ops.where(c > 0.0, a, b), [f32(4, 5), f32(4, 5), f32(5)],
     ELEMENTWISE),
    ("cast_to_float64", lambda x: ops.cast(x, "float64") * 3.0, [f32(4, 5)], ELEMENTWISE),
    ("cast_to_int32", lambda x: ops.cast(x * 3.0, "int32"), [f32(4, 5)], EXACT),
    ("stop_gradient", lambda x: ops.stop_gradient(x) * x, [f32(4, 5)], ELEMENTWISE),
    ("sum_axes_keepdims", lambda x: ops.sum(x, (0, 2), keepdims=True), [f32(3, 4, 5)],
     ELEMENTWISE),
    ("sum_all", ops.sum, [f32(6, 7)], ELEMENTWISE),
    ("mean_and_size", lambda x: ops.mean(x, 0), [f32(6, 7)], ELEMENTWISE),
    ("max", lambda x: ops.max(x, 1), [distinct(3, 4, 5)], ELEMENTWISE),
    ("argmax", lambda x: ops.argmax(x, 1), [distinct(3, 4, 5)], EXACT),
    ("broadcast_like", ops.broadcast_like, [f32(5), f32(3, 5)], ELEMENTWISE),
    ("sum_like", lambda g, like: SumLike()(g, like), [f32(4, 3), f32(1, 3)], ELEMENTWISE),
    ("reshape_transpose", lambda x: ops.transpose(ops.reshape(x, (4, 3, 2)), (2, 0, 1)) * 2.0,
     [f32(6, 4)], ELEMENTWISE),
    ("expand_squeeze_identity", lambda x: ops.identity(ops.squeeze(ops.expand_dims(x, 1), 1)),
     [f32(3, 4)], ELEMENTWISE),
    ("matmul", ops.matmul, [f32(16, 32), f32(32, 8)], GEMM),
    ("matmul_batched", ops.matmul, [f32(3, 8, 16), f32(16, 4)], GEMM),
    ("dense_chain", lambda x, w1, b1, w2, b2: DenseChain(("relu", "sigmoid"))(x, w1, b1, w2, b2),
     [f32(16, 32), f32(32, 8), f32(8), f32(8, 4), f32(4)], GEMM),
    ("gemm", lambda a, b, c: ops.gemm(a, b, c, -0.5, 0.9), [f32(16, 32), f32(32, 8), f32(16, 8)],
     GEMM),
    ("softmax", lambda x: ops.softmax(x), [f32(6, 5, low=-20.0, high=20.0)], ELEMENTWISE),
    ("softmax_cross_entropy", ops.softmax_cross_entropy,
     [f32(6, 5, low=-20.0, high=20.0), soft_labels(6, 5)], ELEMENTWISE),
    ("sparse_softmax_cross_entropy", ops.sparse_softmax_cross_entropy,
     [f32(6, 5, low=-20.0, high=20.0), RNG.integers(0, 5, 6)], ELEMENTWISE),
    ("sparse_cross_entropy_total", lambda z, y: SparseCrossEntropyTotal()(z, y),
     [f32(6, 5, low=-20.0, high=20.0), RNG.integers(0, 5, 6)], ELEMENTWISE),
    ("argmax_hits", lambda s, y: ArgmaxHits("int64")(s, y), [distinct(6, 5),
                                                            RNG.integers(0, 5, 6)], EXACT),
    ("one_hot", lambda i: ops.one_hot(i, 7, "float32"), [RNG.integers(0, 7, (3, 4))], EXACT),
    ("gather_scatter_add", ops.gather, [f32(10, 3), RNG.integers(0, 10, (4, 5))],
     ELEMENTWISE),
    ("concatenate", lambda a, b: ops.concatenate([a, b], axis=1), [f32(3, 2), f32(3, 4)],
     ELEMENTWISE),
    ("slice", lambda x: ops.slice_axis(x, 1, 1, 4) * 2.0, [f32(3, 5)], ELEMENTWISE),
    ("concat_piece", lambda g, a, b: ConcatPiece(0, 1)(g, a, b) * 2.0,
     [f32(5, 3), f32(2, 3), f32(3, 3)], ELEMENTWISE),
    ("pad", lambda x: ops.pad(x, ((0, 0), (2, 1))), [f32(3, 5)], ELEMENTWISE),
    ("argsort", lambda x: argsort(x, axis=1), [distinct(3, 6)], EXACT),
    ("integral_indices", lambda x: IntegralIndices("labels")(x), [grid(3, 4)], EXACT),
    ("custom_gradient", lambda x: CustomGradient(lambda g: [g * 3.0])(ops.tanh(x), x),
     [f32(4, 5)], ELEMENTWISE),
    ("random_uniform", lambda like, counter: ops.random_uniform(like, 7, counter),
     [f32(3, 50), np.array(12, np.int64)], EXACT),
    *[(f"conv2d_{hw}_{khw}_{strides}_{padding}_{dilation}_{groups}",
       lambda x, w, s=strides, p=padding, d=dilation, g=groups: ops.conv2d(x, w, s, p, d, g),
       [f32(2, *hw, 4), f32(*khw, 4 // groups, 4)], GEMM)
      for hw, khw, strides, padding, dilation, groups in CONVS],
    *[(f"max_pool2d_{hw}_{pool}_{strides}_{padding}",
       lambda x, k=pool, s=strides, p=padding: ops.max_pool2d(x, k, s, p),
       [distinct(2, *hw, 3)], ELEMENTWISE) for hw, pool, strides, padding in POOLS],
    *[(f"avg_pool2d_{hw}_{pool}_{strides}_{padding}",
       lambda x, k=pool, s=strides, p=padding: ops.avg_pool2d(x, k, s, p),
       [f32(2, *hw, 3)], ELEMENTWISE) for hw, pool, strides, padding in POOLS],
    ("max_pool_gather", lambda x, u: ops.max_pool_gather(x, u, (2, 2), (1, 1), "same"),
     [distinct(2, 5, 5, 3), f32(2, 5, 5, 3)], ELEMENTWISE),
    ("sin_cos", lambda x: ops.sin(x) * ops.cos(x), [f32(4, 5)], ELEMENTWISE),
    # bilinear only: nearest sampling is discontinuous at ties, where FMA on the GPU may round
    # a source point the other way
    ("image_transform", lambda x, t: ops.image_transform(x, t, (5, 7), "bilinear", "reflect"),
     [f32(2, 6, 5, 3), np.array([[0.9, -0.4, 2.2, 0.4, 0.9, -1.7, 0, 0],
                                 [1.3, 0.1, -1.0, 0.0, 0.7, 0.9, 0.01, 0]], np.float32)],
     ELEMENTWISE),
]


def graph(build, inputs):
    """Placeholders for ``inputs``, the output, and its gradients with respect to every float
    input (for a random cotangent, fed last) when the output is float."""
    xs = [placeholder(a.shape, a.dtype, name=f"input{i}") for i, a in enumerate(inputs)]
    y = build(*xs)
    if y.dtype.kind != "f":
        return xs, [y]
    gy = placeholder(y.shape, y.dtype, name="cotangent")
    floats = [x for x, a in zip(xs, inputs) if a.dtype.kind == "f"]
    return xs + [gy], [y] + [g for g in grad(y, floats, grad_y=gy) if g is not None]


def feeds(inputs, outputs):
    if len(outputs) == 1 and outputs[0].dtype.kind != "f":
        return list(inputs)
    y = outputs[0]
    return list(inputs) + [np.random.default_rng(5).standard_normal(y.shape).astype(y.dtype)]


def test_the_op_table_runs_every_numpy_kernel():
    """What the GPU comparison below covers, checked here without a GPU."""
    from hiapi.backends.numpy_backend import backend as numpy_backend
    used = {"fused_elementwise"}        # test_fused_programs_match_numpy
    for _, build, inputs, _ in CASES:
        used |= {v.op.name for v in topological_order(graph(build, inputs)[1])}
    assert set(numpy_backend.kernels) - used == set()


def run(backend_name, build, inputs):
    """Outputs (and the op names compiled) of the case's graph on a backend."""
    backends.set_backend(backend_name)
    xs, outputs = graph(build, inputs)
    function = Function(xs, outputs)
    values = function(*feeds(inputs, outputs))
    executable = next(iter(function._executables.values()))
    return values, {v.op.name for v in executable.order}


@pytest.fixture
def each_kernel_alone(restore_backend):
    """No graph passes: every op runs its own kernel (fusion is tested on its own)."""
    config.set_passes("none")
    yield
    config.set_passes(None)


@needs_gpu
@pytest.mark.parametrize("build, inputs, tolerance",
                         [pytest.param(*case[1:], id=case[0]) for case in CASES])
def test_every_kernel_matches_numpy(each_kernel_alone, build, inputs, tolerance):
    got, names = run("cupy", build, inputs)
    expected, _ = run("numpy", build, inputs)
    for i, (a, b) in enumerate(zip(got, expected)):
        assert isinstance(a, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, **tolerance,
                                   err_msg=f"output {i} ({'forward' if i == 0 else 'gradient'})"
                                           f" of a graph with ops {sorted(names)}")


@needs_gpu
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fused_programs_match_numpy(restore_backend, dtype):
    def build(x, b):
        y = ops.where(x > 0.5, ops.sigmoid(ops.tanh(x * 2.0 + b) * x), -ops.relu(x) / 3.0)
        return ops.maximum(ops.exp(-ops.abs(y)), ops.cast(x > b, dtype)) + ops.sqrt(b * b)
    inputs = [f32(64, 300).astype(dtype), f32(300).astype(dtype)]   # b broadcasts
    got, names = run("cupy", build, inputs)
    expected, _ = run("numpy", build, inputs)
    assert "fused_elementwise" in names
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, **(ELEMENTWISE if dtype == "float32" else
                                            dict(rtol=1e-12, atol=1e-14)))


@needs_gpu
def test_out_of_range_sparse_label_fails_as_on_numpy(restore_backend):
    backends.set_backend("cupy")
    logits, labels = placeholder((None, 5)), placeholder((None,), "int64")
    f = Function([logits, labels], ops.sparse_softmax_cross_entropy(logits, labels))
    with pytest.raises(ValueError, match=r"label 7 is outside the 5 classes \[0, 4\]"):
        f(np.zeros((3, 5), np.float32), np.array([1, 7, 2]))
    with pytest.raises(ValueError, match=r"label -1 is outside the 5 classes"):
        f(np.zeros((3, 5), np.float32), np.array([1, -1, 2]))
    np.testing.assert_allclose(f(np.zeros((2, 5), np.float32), np.array([0, 4])), np.log(5.0),
                               rtol=1e-6)                # and the next good step runs


# ------------------------------------------------------------------ randomness and training


@needs_gpu
def test_dropout_masks_equal_the_cpu_ones(restore_backend):
    import cupy
    from hiapi.backends.splitmix import splitmix64_uniform

    def masks(backend_name):
        backends.set_backend(backend_name)
        like, counter = placeholder((None, 257)), placeholder((), "int64")
        u = ops.random_uniform(like, 1234, counter)
        f = Function([like, counter], [u, u >= 0.5])
        return [f(np.zeros((33, 257), np.float32), c) for c in (0, 1, 2, 2**40 + 3)]

    for (u_gpu, keep_gpu), (u_cpu, keep_cpu), c in zip(masks("cupy"), masks("numpy"),
                                                       (0, 1, 2, 2**40 + 3)):
        np.testing.assert_array_equal(u_gpu, u_cpu)
        np.testing.assert_array_equal(keep_gpu, keep_cpu)
        reference = cupy.asnumpy(splitmix64_uniform(cupy, (33, 257), 1234, c))
        np.testing.assert_array_equal(u_gpu, reference)


def mnist_accuracy(backend_name, dropout):
    backends.set_backend(backend_name)
    hiapi.utils.set_random_seed(3)
    (x, y), (x_test, y_test) = hiapi.datasets.mnist.load_data()
    x, y, x_test, y_test = x[:3000] / 255.0, y[:3000], x_test[:1000] / 255.0, y_test[:1000]
    model = hiapi.Sequential([hiapi.Input(shape=(28, 28)), layers.Flatten(),
                              layers.Dense(64, activation="relu"), layers.Dropout(dropout),
                              layers.Dense(10, activation="softmax")])
    model.compile(optimizer=hiapi.optimizers.SGD(0.1, momentum=0.9),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(x, y, batch_size=64, epochs=2, verbose=0)
    return model.evaluate(x_test, y_test, verbose=0)[1]


@needs_gpu
def test_mnist_mlp_reaches_the_numpy_accuracy(restore_backend):
    gpu, cpu = mnist_accuracy("cupy", 0.2), mnist_accuracy("numpy", 0.2)
    assert cpu > 0.8
    assert abs(gpu - cpu) <= 0.01, f"accuracy on cupy {gpu:.4f}, on numpy {cpu:.4f}"


@needs_gpu
def test_convnet_train_steps_match_numpy(restore_backend):
    """Conv, pooling, dropout, fusion and SGD together: three steps, loss by loss."""
    def losses(backend_name):
        backends.set_backend(backend_name)
        hiapi.utils.set_random_seed(4)
        model = hiapi.Sequential([
            hiapi.Input(shape=(12, 12, 1)), layers.Conv2D(8, 3, activation="relu"),
            layers.MaxPooling2D(), layers.Conv2D(8, 3, padding="same", activation="relu"),
            layers.AveragePooling2D(), layers.Flatten(), layers.Dropout(0.3), layers.Dense(10)])
        model.compile(optimizer=hiapi.optimizers.SGD(0.05, momentum=0.9),
                      loss=hiapi.losses.SparseCategoricalCrossentropy(from_logits=True))
        data = np.random.default_rng(6)
        x, y = data.random((16, 12, 12, 1)).astype(np.float32), data.integers(0, 10, 16)
        return [float(np.ravel(model.train_on_batch(x, y))[0]) for _ in range(3)]
    np.testing.assert_allclose(losses("cupy"), losses("numpy"), rtol=1e-4)


@needs_gpu
def test_convolution_temporaries_are_planned_not_pooled(restore_backend):
    """The im2col columns (19 and 38 MiB here), padded inputs and gradient grids live in the
    arena (issue #15): a step takes from cupy's memory pool only its batch."""
    import cupy
    backends.set_backend("cupy")
    hiapi.utils.set_random_seed(0)
    model = hiapi.Sequential([hiapi.Input(shape=(32, 32, 8)),
                              layers.Conv2D(16, 3, padding="same", activation="relu"),
                              layers.Conv2D(16, 3, padding="same"),
                              layers.GlobalAveragePooling2D(), layers.Dense(10)])
    model.compile("sgd", hiapi.losses.SparseCategoricalCrossentropy(from_logits=True))
    data = np.random.default_rng(0)
    x, y = data.random((64, 32, 32, 8)).astype(np.float32), data.integers(0, 10, 64)
    model.train_on_batch(x, y)
    step = [f for key, f in model._step_functions.items() if key[0] == "train"][-1]
    plan = list(step._executables.values())[-1].plan
    assert {"conv2d", "conv2d_filter_grad", "conv2d_input_grad"} <= \
        {var.op.name for var in plan.scratch}
    pool = cupy.get_default_memory_pool()
    pool.free_all_blocks()
    held = pool.total_bytes()
    model.train_on_batch(x, y)
    assert pool.total_bytes() - held < 8 * 2**20        # the 2 MiB batch copied to the device


# ------------------------------------------------------------------ NCCL


MPI = importlib.util.find_spec("mpi4py") is not None


@pytest.mark.skipif(GPUS < 2 or not MPI, reason="needs two GPUs, cupy with NCCL, and mpi4py")
def test_nccl_collectives_under_mpiexec():
    from mpi import run_mpi
    result = run_mpi(2, Path(__file__).resolve(), "--collectives-worker", "NCCLCommunicator")
    assert result.stdout.count(": ok") == 2


@pytest.mark.skipif(GPUS < 1 or not MPI, reason="needs a GPU and mpi4py")
def test_two_ranks_on_one_gpu_stage_collectives_through_the_host():
    """NCCL refuses two ranks on one device, so ``for_backend`` picks the host-staged path."""
    from mpi import run_mpi
    result = run_mpi(2, Path(__file__).resolve(), "--collectives-worker",
                     "HostStagedCommunicator", env={"CUDA_VISIBLE_DEVICES": "0"})
    assert result.stdout.count(": ok") == 2


@pytest.mark.skipif(GPUS < 1 or not MPI, reason="needs a GPU and mpi4py")
def test_two_ranks_on_one_gpu_train_like_one_process(tmp_path, restore_backend):
    """Data-parallel MNIST on one GPU shared by two ranks: the weights of one process trained
    on the global batch, as on the CPU (tests/distribute/test_mpi.py)."""
    import json
    from mpi import run_mpi
    from test_mpi import single_process_weights
    run_mpi(2, "train.py", tmp_path, "none", env={"CUDA_VISIBLE_DEVICES": "0",
                                                   "HIAPI_BACKEND": "cupy"})
    backends.set_backend("cupy")
    reference, history = single_process_weights(50, hiapi.optimizers.SGD(0.1, momentum=0.9))
    for rank in range(2):
        weights = np.load(tmp_path / f"weights_{rank}.npz")
        for i, expected in enumerate(reference):
            np.testing.assert_allclose(weights[f"arr_{i}"], expected, rtol=1e-4, atol=1e-5)
    logs = json.load(open(tmp_path / "history_0.json"))
    assert logs["communicator"] == "HostStagedCommunicator"
    np.testing.assert_allclose(logs["history"]["loss"], history["loss"], rtol=1e-4)


def collectives_worker(expected):
    """Run by ``mpiexec -n 2`` (see the tests above): each collective on device arrays, through
    the communicator ``for_backend`` chooses, which must be ``expected``."""
    import cupy
    from mpi4py import MPI
    from hiapi.distribute.communicator import MPICommunicator
    from hiapi.distribute.nccl import for_backend
    comm = for_backend(MPICommunicator(MPI.COMM_WORLD), "cupy")
    assert type(comm).__name__ == expected, type(comm).__name__
    rank, size = comm.rank, comm.size
    assert cupy.cuda.Device().id == rank % cupy.cuda.runtime.getDeviceCount()
    x = cupy.arange(10, dtype=cupy.float32) * (rank + 1)
    assert comm.allreduce(x) is x
    np.testing.assert_allclose(cupy.asnumpy(x), np.arange(10) * size * (size + 1) / 2)
    y = cupy.full(100_000, rank + 1.0)
    assert comm.iallreduce(y).wait() is y
    np.testing.assert_allclose(cupy.asnumpy(y), size * (size + 1) / 2)
    gathered, sizes = comm.allgather(cupy.arange(rank + 2, dtype=cupy.int64))
    assert sizes == [r + 2 for r in range(size)]
    np.testing.assert_array_equal(cupy.asnumpy(gathered),
                                  np.concatenate([np.arange(r + 2) for r in range(size)]))
    b = cupy.full(5, float(rank))
    comm.bcast(b, root=1)
    np.testing.assert_array_equal(cupy.asnumpy(b), 1.0)
    host = comm.allreduce(np.array([rank], np.float64))           # host arrays go over MPI
    assert host[0] == size * (size - 1) / 2
    comm.barrier()
    print(f"rank {rank}: ok", flush=True)


if __name__ == "__main__" and sys.argv[1:2] == ["--collectives-worker"]:
    collectives_worker(sys.argv[2])
