"""The dense chain: the pass that builds it, its numba kernel's maths against float64 numpy, its
thread-count invariance, its gradient, and the transposed weights it keeps between calls
being made again whenever a weight changes."""
import threading

import numpy as np
import pytest

import hiapi
from hiapi import layers
from hiapi.backends import get_backend
from hiapi.graph import Function, placeholder
from hiapi.graph.passes import dense_chain as pass_module
from hiapi.graph.passes.dense_chain import DenseChain
from hiapi.graph.schedule import topological_order
from hiapi.runtime import threads


def _numba_backend():
    pytest.importorskip("numba")
    from hiapi.backends.numba_backend import backend
    return backend


def _reference(x, params, activations):
    a = x.astype(np.float64)
    for w, b, act in zip(params[0::2], params[1::2], activations):
        a = a @ w.astype(np.float64) + b
        if act == "relu":
            a = np.maximum(a, 0)
        elif act == "sigmoid":
            a = 1 / (1 + np.exp(-a))
        elif act == "tanh":
            a = np.tanh(a)
    return a


def _params(rng, sizes, dtype=np.float32):
    params = []
    for k, n in zip(sizes[:-1], sizes[1:]):
        params += [(rng.standard_normal((k, n)) / np.sqrt(k)).astype(dtype),
                   rng.standard_normal(n).astype(dtype) * 0.1]
    return params


def _run_kernel(x, params, activations, state=True):
    """The kernel's output at its second call on the same buffers (its first call after a
    Variable write runs layer by layer, the second on transposed weights), checked equal to
    the first's within float32 rounding."""
    kernel = _numba_backend().kernels["dense_chain"]
    out = np.empty((x.shape[0], params[-2].shape[1]), x.dtype)
    kernel(out, x, *params, activations=tuple(activations), weights_are_state=state)
    first = out.copy()
    kernel(out, x, *params, activations=tuple(activations), weights_are_state=state)
    np.testing.assert_allclose(out, first, rtol=2e-5, atol=2e-5, equal_nan=True)
    return out


@pytest.mark.parametrize("rows", [1, 3, 4, 5, 17, 32, 64, 65, 130])
@pytest.mark.parametrize("sizes,activations", [
    ((784, 128, 10), ("relu", "linear")),
    ((7, 5), ("sigmoid",)),
    ((9, 6, 3, 4), ("tanh", "relu", "sigmoid")),
])
def test_numba_kernel_matches_float64_numpy(rows, sizes, activations):
    rng = np.random.default_rng(rows)
    x = rng.standard_normal((rows, sizes[0])).astype(np.float32)
    params = _params(rng, sizes)
    out = _run_kernel(x, params, activations)
    np.testing.assert_allclose(out, _reference(x, params, activations), rtol=2e-5, atol=2e-5)


def test_numba_kernel_reads_a_strided_batch():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 40)).astype(np.float32)[:, ::2]
    params = _params(rng, (20, 8, 4))
    np.testing.assert_allclose(_run_kernel(x, params, ("relu", "linear")),
                               _reference(x, params, ("relu", "linear")), rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("act", ["relu", "linear", "tanh"])
def test_numba_kernel_keeps_nan_and_inf(act):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 6)).astype(np.float32)
    x[2, 3], x[5, 0] = np.nan, np.inf
    params = _params(rng, (6, 4))
    with np.errstate(invalid="ignore"):              # as the executor runs kernels
        out = _run_kernel(x, params, (act,))
        expected = _reference(x, params, (act,))
    assert np.isnan(out[2]).all()                   # relu keeps NaN, as np.maximum does
    np.testing.assert_allclose(out, expected, rtol=2e-5, atol=2e-5, equal_nan=True)


def test_numba_kernel_gives_the_same_bits_on_one_and_two_threads():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((31, 50)).astype(np.float32)
    params = _params(rng, (50, 33, 7))
    try:
        hiapi.config.set_num_threads(1)
        one = _run_kernel(x, params, ("relu", "linear"))
        hiapi.config.set_num_threads(2)
        two = _run_kernel(x, params, ("relu", "linear"))
    finally:
        hiapi.config.set_num_threads(None)
    np.testing.assert_array_equal(one, two)


def test_numba_kernel_with_helpers_that_sleep(monkeypatch):
    """HIAPI_SPIN_US=0: every job wakes a sleeping helper; results are the same."""
    _numba_backend()
    from hiapi.backends.numba_backend.dense_chain_kernels import chain_job, serve
    from hiapi.backends.numba_backend.spin_workers import SpinWorkers
    from hiapi.backends.numba_backend import dense_chain as module
    monkeypatch.setenv("HIAPI_SPIN_US", "0")
    monkeypatch.setattr(module, "workers", SpinWorkers(chain_job, serve))
    rng = np.random.default_rng(3)
    params = _params(rng, (30, 12, 5))
    try:
        hiapi.config.set_num_threads(2)
        for rows in (8, 32, 64):
            x = rng.standard_normal((rows, 30)).astype(np.float32)
            for _ in range(3):
                np.testing.assert_allclose(_run_kernel(x, params, ("relu", "linear")),
                                           _reference(x, params, ("relu", "linear")),
                                           rtol=2e-5, atol=2e-5)
        assert module.workers._helpers, "a helper ran"
    finally:
        hiapi.config.set_num_threads(None)


def test_numba_kernel_from_two_threads_at_once():
    """One job at a time on the helpers: a second caller runs its rows alone, right."""
    rng = np.random.default_rng(4)
    params = _params(rng, (64, 32, 8))
    xs = [rng.standard_normal((32, 64)).astype(np.float32) for _ in range(2)]
    wrong = []

    def work(x):
        for _ in range(200):
            out = _run_kernel(x, params, ("relu", "linear"))
            if not np.allclose(out, _reference(x, params, ("relu", "linear")), rtol=2e-5,
                               atol=2e-5):
                wrong.append(out)
    try:
        hiapi.config.set_num_threads(2)
        workers = [threading.Thread(target=work, args=(x,)) for x in xs]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    finally:
        hiapi.config.set_num_threads(None)
    assert not wrong


def test_weights_fed_as_inputs_are_read_at_every_call():
    """Without ``weights_are_state`` the kernel keeps no copy: a weight changed in place
    between calls is seen."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((8, 6)).astype(np.float32)
    params = _params(rng, (6, 4))
    first = _run_kernel(x, params, ("linear",), state=False)
    params[0] *= 2
    second = _run_kernel(x, params, ("linear",), state=False)
    np.testing.assert_allclose(second, _reference(x, params, ("linear",)), rtol=2e-5, atol=2e-5)
    assert not np.allclose(first, second)


def test_the_op_on_the_current_backend_and_its_gradient():
    """Forward against numpy and float64 finite differences of the gradient (the op's grad is
    that of the unfused layers); on numpy, numba and any backend with the kernel."""
    from check_op import check_op
    if "dense_chain" not in get_backend().kernels:
        pytest.skip(f"backend {get_backend().name!r} has no dense_chain kernel (only backends "
                    f"that ask for the rewrite need one)")
    rng = np.random.default_rng(6)
    x = rng.standard_normal((5, 4))
    params = _params(rng, (4, 3, 2), np.float64)
    acts = ("tanh", "sigmoid")
    check_op(lambda *v: DenseChain(acts)(*v), [x] + params,
             lambda x, *p: _reference(x, p, acts), batch=[True] + [False] * 4)


def _mlp(units=(16,), activation="relu", last=None):
    model = hiapi.Sequential([hiapi.Input(shape=(12,))] +
                             [layers.Dense(u, activation=activation) for u in units] +
                             [layers.Dense(3, activation=last)])
    model.compile(optimizer="sgd", loss="mse")
    return model


def _ops(fn):
    outputs, updates = fn.optimized()
    return [v.op.name for v in topological_order(outputs + [u for _, u in updates])]


def test_pass_builds_one_chain_in_an_inference_graph_only():
    model = _mlp(units=(16, 8))
    x, y = np.ones((4, 12), np.float32), np.ones((4, 3), np.float32)
    model.fit(x, y, verbose=0)
    model.predict(x, verbose=0)
    xs = placeholder((None, 12), "float32")
    out = model(xs)
    assert ("dense_chain" in _ops(Function([xs], out))) == ("dense_chain" in
                                                             get_backend().rewrites)
    roots = pass_module.run([out], rewrites={"dense_chain"})
    chain = [v for v in topological_order(roots) if v.op.name == "dense_chain"]
    assert len(chain) == 1 and chain[0].op.activations == ("relu", "relu", "linear")
    assert chain[0].op.weights_are_state
    # a train step: every weight also feeds its update, so nothing matches
    train = model._step("train", [x], [y], [])
    assert "dense_chain" not in _ops(train)


def test_pass_leaves_shared_weights_and_outputs_alone():
    inputs = hiapi.Input(shape=(6,))
    dense = layers.Dense(6, activation="relu")
    hidden = layers.Dense(5, activation="tanh")(inputs)
    twice = dense(dense(layers.Dense(6)(hidden)))      # one layer used twice: W read twice
    model = hiapi.Model(inputs, [hidden, twice])
    xs = placeholder((None, 6), "float32")
    roots = pass_module.run(list(model(xs)), rewrites={"dense_chain"})
    chains = [v.op for v in topological_order(roots) if v.op.name == "dense_chain"]
    # the first layer ends a chain of its own (its output is a model output); the shared
    # layer is left unfused; the Dense(6) between is a one-layer chain
    assert sorted(op.activations for op in chains) == [("linear",), ("tanh",)]


def test_pass_skips_float64_and_runs_only_when_asked():
    xs = placeholder((None, 4), "float64")
    w = hiapi.Variable(np.ones((4, 2)), dtype="float64")
    b = hiapi.Variable(np.zeros(2), dtype="float64")
    y = hiapi.ops.matmul(xs, w) + b
    assert pass_module.run([y], rewrites={"dense_chain"})[0] is y
    xs32 = placeholder((None, 4), "float32")
    w32, b32 = hiapi.Variable(np.ones((4, 2), np.float32)), hiapi.Variable(np.zeros(2, np.float32))
    y32 = hiapi.ops.matmul(xs32, w32) + b32
    assert pass_module.run([y32])[0] is y32
    assert pass_module.run([y32], rewrites={"dense_chain"})[0].op.name == "dense_chain"


@pytest.fixture
def numba_backend():
    _numba_backend()
    previous = hiapi.backends.get_backend().name
    hiapi.backends.set_backend("numba")
    yield
    hiapi.backends.set_backend(previous)


def test_predict_sees_every_way_a_weight_changes(numba_backend):
    hiapi.utils.set_random_seed(0)
    model = _mlp(units=(16,), last="softmax")
    rng = np.random.default_rng(7)
    x, y = rng.standard_normal((64, 12)).astype(np.float32), rng.random((64, 3), np.float32)
    predict = model._step("predict", [x[:32]])
    assert "dense_chain" in _ops(predict)

    def expected():
        w = [v.numpy() for v in model.weights]
        return _reference(x, w, ("relu", "linear"))

    def check():
        logits = expected()
        probabilities = np.exp(logits - logits.max(1, keepdims=True))
        probabilities /= probabilities.sum(1, keepdims=True)
        np.testing.assert_allclose(model.predict(x, batch_size=32, verbose=0), probabilities,
                                   rtol=1e-4, atol=1e-6)

    check()
    model.fit(x, y, epochs=1, batch_size=16, verbose=0)             # a train step
    check()
    kernel = model.layers[0].kernel
    kernel.assign(kernel.numpy() * 0.5)                              # assign
    check()
    model.layers[1].kernel.value = model.layers[1].kernel.numpy() + 1   # a new array
    check()
    model.layers[0].bias.value[...] = 3.0                            # in place, between calls
    check()
    model.set_weights([w * 0.9 for w in model.get_weights()])        # set_weights
    check()
    np.testing.assert_allclose(model.predict_on_batch(x[:5]), model.predict(x[:5], verbose=0))


def test_predict_equals_the_unfused_graph(numba_backend, monkeypatch):
    hiapi.utils.set_random_seed(1)
    model = _mlp(units=(32, 16), activation="tanh")
    x = np.random.default_rng(8).standard_normal((100, 12)).astype(np.float32)
    fused = model.predict(x, batch_size=32, verbose=0)
    y = np.random.default_rng(9).random((100, 3), np.float32)
    fused_loss = model.evaluate(x, y, batch_size=32, verbose=0)
    monkeypatch.setenv("HIAPI_PASSES", "-dense_chain")
    plain_model = hiapi.models.clone_model(model)
    plain_model.set_weights(model.get_weights())
    plain_model.compile(optimizer="sgd", loss="mse")
    np.testing.assert_allclose(plain_model.predict(x, batch_size=32, verbose=0), fused,
                               rtol=1e-5, atol=1e-6)
    assert plain_model.evaluate(x, y, batch_size=32, verbose=0) == pytest.approx(fused_loss,
                                                                                 rel=1e-5)
    assert threads.active_threads() >= 1


def test_weights_are_transposed_again_only_when_they_changed(numba_backend, monkeypatch):
    """Once a weight's array was handed out, predict and evaluate count as writes when they
    start (an in-place edit is seen), but a weight whose fingerprint did not change keeps its
    copy; a train step changes them all."""
    from hiapi.backends.numba_backend import dense_chain as module
    from hiapi.runtime import state_writes
    monkeypatch.setattr(state_writes, "_handed_out", True)
    made = []
    original = module.K.transpose_into
    monkeypatch.setattr(module.K, "transpose_into", lambda w, t: made.append(w.shape) or
                        original(w, t))
    hiapi.utils.set_random_seed(2)
    model = _mlp(units=(16,))
    rng = np.random.default_rng(10)
    x, y = rng.standard_normal((64, 12)).astype(np.float32), rng.random((64, 3), np.float32)
    first = model.predict(x, batch_size=16, verbose=0)
    for _ in range(3):
        np.testing.assert_array_equal(model.predict(x, batch_size=16, verbose=0), first)
    assert sorted(made) == [(12, 16), (16, 3)]
    model.train_on_batch(x[:32], y[:32])
    model.predict(x, batch_size=16, verbose=0)
    assert sorted(made) == [(12, 16), (12, 16), (16, 3), (16, 3)]


def test_predict_checks_the_weights_only_once_an_array_was_handed_out(numba_backend,
                                                                      monkeypatch):
    """Until a Variable's own array leaves the library (``value``), nothing can edit it in
    place, so ``predict`` counts no write and the weights are not fingerprinted again; once
    one has, every later call checks them, also for an array the caller kept."""
    from hiapi.backends.numba_backend import dense_chain as module
    from hiapi.runtime import state_writes
    monkeypatch.setattr(state_writes, "_handed_out", False)
    prints = []
    original = module.K.fingerprint
    monkeypatch.setattr(module.K, "fingerprint", lambda w: prints.append(w.shape) or
                        original(w))
    hiapi.utils.set_random_seed(3)
    model = _mlp(units=(16,))
    x = np.random.default_rng(11).standard_normal((64, 12)).astype(np.float32)
    first = model.predict(x, batch_size=16, verbose=0)
    model.get_weights()                                  # copies: nothing handed out
    made, writes = len(prints), state_writes.count()
    for _ in range(3):
        np.testing.assert_array_equal(model.predict(x, batch_size=16, verbose=0), first)
        np.testing.assert_array_equal(model.predict_on_batch(x[:16]), first[:16])
    assert (len(prints), state_writes.count()) == (made, writes)
    kernel = model.layers[0].kernel.value                # handed out, kept by the caller
    model.predict(x, batch_size=16, verbose=0)
    assert len(prints) == made + 2 and state_writes.count() == writes + 1
    kernel *= 0.5                                        # edited in place later
    w = [v.numpy() for v in model.weights]
    np.testing.assert_allclose(model.predict(x, batch_size=16, verbose=0),
                               _reference(x, w, ("relu", "linear")), rtol=1e-4, atol=1e-5)


def test_the_same_batch_gives_the_same_bits_at_every_call(numba_backend):
    """The path a call takes depends only on its shapes: a generator's batches and the array's,
    the first predict and the tenth, agree bit for bit."""
    hiapi.utils.set_random_seed(4)
    model = _mlp(units=(16, 8))
    x = np.random.default_rng(12).standard_normal((96, 12)).astype(np.float32)
    arrays = model.predict(x, batch_size=32, verbose=0)
    for _ in range(3):
        np.testing.assert_array_equal(model.predict(x, batch_size=32, verbose=0), arrays)
        np.testing.assert_array_equal(
            model.predict((x[i:i + 32] for i in range(0, 96, 32)), verbose=0), arrays)


def test_single_samples_run_layer_by_layer(numba_backend, monkeypatch):
    from hiapi.backends.numba_backend import dense_chain as module
    layer_by_layer = []
    original = module._by_layer
    monkeypatch.setattr(module, "_by_layer",
                        lambda *a, **k: layer_by_layer.append(a[1].shape[0]) or original(*a, **k))
    hiapi.utils.set_random_seed(5)
    model = _mlp(units=(16,))
    x = np.random.default_rng(13).standard_normal((8, 12)).astype(np.float32)
    for rows in (1, 3, 4, 8):
        np.testing.assert_allclose(model.predict(x[:rows], verbose=0),
                                   _reference(x[:rows], [v.numpy() for v in model.weights],
                                              ("relu", "linear")), rtol=2e-5, atol=2e-5)
    assert layer_by_layer == [1, 3]


def test_large_layers_at_64_rows_run_layer_by_layer(monkeypatch):
    """rows x the largest weight past MAX_WORK goes to BLAS (its packed GEMM wins there)."""
    _numba_backend()
    from hiapi.backends.numba_backend import dense_chain as module
    calls = []
    original = module._by_layer
    monkeypatch.setattr(module, "_by_layer", lambda *a: calls.append(a[1].shape) or original(*a))
    monkeypatch.setattr(module, "MAX_WORK", 32 * 40 * 30)
    rng = np.random.default_rng(14)
    params = _params(rng, (40, 30, 5))
    for rows in (32, 33):
        x = rng.standard_normal((rows, 40)).astype(np.float32)
        np.testing.assert_allclose(_run_kernel(x, params, ("relu", "linear")),
                                   _reference(x, params, ("relu", "linear")), rtol=2e-5,
                                   atol=2e-5)
    assert calls == [(33, 40), (33, 40)]


@pytest.mark.parametrize("sizes, on_blas", [((100, 64, 10), (256, 64)),      # head on BLAS
                                            ((100, 10), None),                # all in loops
                                            ((100, 64, 10, 3), (256, 64)),    # two narrow
                                            ((100, 64, 32), (256, 32))])      # none narrow
def test_a_large_batch_runs_its_narrow_last_layers_in_the_loops(sizes, on_blas, monkeypatch):
    """Past MAX_ROWS the wide layers go to BLAS and the narrow ones at the end (a classifier's
    head, where BLAS packs a whole input for a few columns) to the loops, on the calling
    thread: the values of the reference, and only the wide layers in ``_by_layer``."""
    _numba_backend()
    from hiapi.backends.numba_backend import dense_chain as module
    calls, parts = [], []
    original, run = module._by_layer, module.workers.run
    monkeypatch.setattr(module, "_by_layer", lambda *a: calls.append(a[0].shape) or original(*a))
    monkeypatch.setattr(module.workers, "run", lambda d, n: parts.append(n) or run(d, n))
    rng = np.random.default_rng(16)
    params = _params(rng, sizes)
    activations = ("relu",) * (len(sizes) - 2) + ("linear",)
    x = rng.standard_normal((256, 100)).astype(np.float32)
    np.testing.assert_allclose(_run_kernel(x, params, activations),
                               _reference(x, params, activations), rtol=2e-5, atol=2e-5)
    assert calls == [on_blas] * 2 if on_blas else calls == []     # the output of _by_layer
    assert parts == ([] if on_blas == (256, sizes[-1]) else [1, 1])


def test_weights_not_in_c_order_run_layer_by_layer():
    """A Variable may be set to a strided view; the descriptor's addresses assume C order, so
    such a chain runs layer by layer, with the right values."""
    rng = np.random.default_rng(15)
    params = _params(rng, (10, 6, 3))
    params[1] = np.repeat(params[1], 2)[::2]               # a bias that is a strided view
    params[2] = np.asfortranarray(params[2])
    x = rng.standard_normal((16, 10)).astype(np.float32)
    np.testing.assert_allclose(_run_kernel(x, params, ("relu", "linear")),
                               _reference(x, params, ("relu", "linear")), rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("rows", [65, 130, 257])
@pytest.mark.parametrize("act", ["relu", "sigmoid", "tanh"])
def test_the_tail_adds_the_wide_layers_bias_and_activation_with_the_same_bits(rows, act):
    """Past MAX_ROWS the last wide layer's bias and activation run in the tail's loops, a
    block of rows at a time (``TAIL_BLOCK``), not in a pass of their own after BLAS: the bits
    are those of that pass followed by the loops over all rows, whatever the block edges."""
    _numba_backend()
    from hiapi.backends.numba_backend import dense_chain_kernels as K
    rng = np.random.default_rng(17)
    params = _params(rng, (40, 48, 10))
    x = rng.standard_normal((rows, 40)).astype(np.float32)
    out = _run_kernel(x, params, (act, "linear"))
    h = x @ params[0]
    K.add_bias_activate(h, params[1], K.ACTIVATIONS[act])
    expected = np.empty_like(out)
    K.dense_rows(h, np.ascontiguousarray(params[2].T), params[3], K.LINEAR, expected, 0, rows)
    np.testing.assert_array_equal(out, expected)
