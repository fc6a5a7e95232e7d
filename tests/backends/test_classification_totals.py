"""Classification totals: the pass that builds them (test and train steps, what it must leave
alone), each kernel against numpy on every backend (ties, NaN, bad labels, shapes the loops do not
take), the ops' gradients, and a model's numbers with the rewrite against without it."""
import numpy as np
import pytest

import hiapi
from hiapi import layers
from hiapi.backends import get_backend
from hiapi.graph import Function, ops, placeholder
from hiapi.graph.passes import classification_totals as pass_module
from hiapi.graph.passes.classification_totals import ArgmaxHits, SparseCrossEntropyTotal
from hiapi.graph.schedule import topological_order

REWRITES = frozenset({"classification_totals"})


def _backends():
    """The numpy kernels (op by op) and, where numba is installed, its loops."""
    from hiapi.backends.numpy_backend import backend as numpy_backend
    found = [numpy_backend]
    try:
        from hiapi.backends.numba_backend import backend as numba_backend
        found.append(numba_backend)
    except ImportError:
        pass
    return found


BACKENDS = pytest.mark.parametrize("backend", _backends(), ids=lambda b: b.name)


def _cross_entropy_total(logits, labels):
    z = logits.astype(np.float64)
    top = z.max(-1, keepdims=True)
    lse = np.log(np.exp(z - top).sum(-1)) + top[..., 0]
    return float((lse - np.take_along_axis(z, labels[..., None], -1)[..., 0]).sum())


@BACKENDS
@pytest.mark.parametrize("shape", [(1, 3), (32, 10), (7, 5, 4), (0, 6), (3, 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cross_entropy_total_against_numpy(backend, shape, dtype):
    rng = np.random.default_rng(sum(shape))
    logits = (rng.standard_normal(shape) * 8).astype(dtype)
    labels = rng.integers(0, shape[-1], shape[:-1])
    out = np.empty((), dtype)
    backend.kernels["sparse_cross_entropy_total"](out, logits, labels)
    assert out.dtype == dtype
    tolerance = 1e-5 if dtype == np.float32 else 1e-12
    assert float(out) == pytest.approx(_cross_entropy_total(logits, labels), rel=tolerance,
                                       abs=tolerance)


@BACKENDS
def test_cross_entropy_total_refuses_a_label_outside_the_classes(backend):
    logits, labels = np.zeros((4, 3), np.float32), np.array([0, 2, 3, 1])
    with pytest.raises(ValueError) as caught:
        backend.kernels["sparse_softmax_cross_entropy"](np.empty(4, np.float32), logits, labels)
    with pytest.raises(ValueError, match=f"^{caught.value.args[0][:40]}"):
        backend.kernels["sparse_cross_entropy_total"](np.empty((), np.float32), logits, labels)


@BACKENDS
def test_cross_entropy_total_of_nan_or_inf_logits_is_not_finite(backend):
    for bad in (np.nan, np.inf):
        logits = np.zeros((4, 3), np.float32)
        logits[2, 1] = bad
        out = np.empty((), np.float32)
        with np.errstate(all="ignore"):         # as the executor runs every kernel
            backend.kernels["sparse_cross_entropy_total"](out, logits, np.array([0, 1, 1, 2]))
        assert not np.isfinite(out)


@BACKENDS
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.float16])
def test_argmax_hits_counts_as_numpy_argmax(backend, dtype):
    """Ties go to the first largest, a NaN counts as the largest (its first one), labels of any
    integer type; dtypes the loop does not take (int, float16) run op by op."""
    rng = np.random.default_rng(3)
    scores = rng.integers(0, 4, (200, 5)).astype(dtype)       # many ties
    if np.dtype(dtype).kind == "f":
        scores[rng.random(scores.shape) < 0.05] = np.nan
    for labels in (rng.integers(0, 5, 200), np.argmax(scores, -1).astype(np.int32)):
        out = np.empty((), np.float64)
        backend.kernels["argmax_hits"](out, scores, labels, dtype=np.dtype(np.float64))
        assert out == np.sum(np.argmax(scores, -1) == labels)


@BACKENDS
def test_argmax_hits_over_leading_axes_and_strided_scores(backend):
    rng = np.random.default_rng(4)
    scores = rng.standard_normal((6, 4, 9)).astype(np.float32)[:, :, ::2]   # not C order
    labels = rng.integers(0, 5, (6, 4))
    out = np.empty((), np.int64)
    backend.kernels["argmax_hits"](out, scores, labels, dtype=np.dtype(np.int64))
    assert out == np.sum(np.argmax(scores, -1) == labels)


@BACKENDS
@pytest.mark.parametrize("strided", ["scores", "labels"])
def test_a_classifiers_strided_rows_are_still_right(backend, strided):
    """(rows, classes) scores and (rows,) labels go to the loops as they are; a strided one
    goes op by op, with the same results."""
    rng = np.random.default_rng(6)
    scores = (rng.standard_normal((12, 10)) * 4).astype(np.float32)
    labels = rng.integers(0, 10, 24)
    if strided == "scores":
        scores, labels = np.repeat(scores, 2, axis=1)[:, ::2], labels[:12]
    else:
        labels = labels[::2]
    total, hits = np.empty((), np.float32), np.empty((), np.float64)
    backend.kernels["sparse_cross_entropy_total"](total, scores, labels)
    backend.kernels["argmax_hits"](hits, scores, labels, dtype=np.dtype(np.float64))
    assert float(total) == pytest.approx(_cross_entropy_total(scores, labels), rel=1e-5)
    assert hits == np.sum(np.argmax(scores, -1) == labels)


def test_the_ops_on_the_current_backend_and_their_gradients():
    """Forward against numpy and float64 finite differences of the cross-entropy total's
    gradient (that of the unfused ops); the count has none."""
    from check_op import check_op
    rng = np.random.default_rng(5)
    logits, labels = rng.standard_normal((6, 4)), rng.integers(0, 4, 6)
    check_op(lambda z, y: SparseCrossEntropyTotal()(z, y), [logits, labels],
             lambda z, y: np.asarray(_cross_entropy_total(z, y)), grad_inputs=(0,),
             batch=True)
    scores = rng.standard_normal((7, 3))
    check_op(lambda s, y: ArgmaxHits("float32")(s, y), [scores, rng.integers(0, 3, 7)],
             lambda s, y: np.asarray(np.sum(np.argmax(s, -1) == y), np.float32),
             grad_inputs=(), batch=True)
    s, y = placeholder((None, 3), "float64"), placeholder((None,), "int64")
    assert hiapi.graph.grad(ArgmaxHits("float64")(s, y) * ops.sum(s), [s])[0] is not None


def test_infer_names_what_it_expected():
    with pytest.raises(ValueError, match=r"argmax_hits: scores \(None, 3\) take integer labels.*"
                                         r"\(None, 3\) of dtype int64"):
        ArgmaxHits("float32")(placeholder((None, 3), "float32"),
                              placeholder((None, 3), "int64"))
    with pytest.raises(TypeError, match="sparse_softmax_cross_entropy: labels must be integers"):
        SparseCrossEntropyTotal()(placeholder((None, 3), "float32"),
                                  placeholder((None,), "float32"))


def _names(roots):
    return [v.op.name for v in topological_order(roots)]


def _head(logits_shape=(None, 5)):
    """A classifier step's outputs as ``compile`` builds them: the mean loss, the accuracy's
    hit count and its sample count."""
    z, y = placeholder(logits_shape, "float32"), placeholder(logits_shape[:-1], "int64")
    rows = ops.sparse_softmax_cross_entropy(z, y)
    loss = ops.mean(rows)
    top = ops.argmax(z, -1)
    hits = ops.cast(ops.cast(ops.equal(top, y), "float32"), "float64")
    return z, y, (rows, top), hits, [loss, ops.sum(hits), ops.size(hits, dtype="float64")]


@pytest.fixture
def numba_backend():
    pytest.importorskip("numba")
    previous = get_backend().name
    hiapi.backends.set_backend("numba")
    yield
    hiapi.backends.set_backend(previous)


def test_pass_matches_the_loss_and_the_accuracy():
    _, _, _, _, roots = _head()
    names = _names(pass_module.run(roots, rewrites=REWRITES))
    assert names.count("sparse_cross_entropy_total") == 1 and names.count("argmax_hits") == 1
    assert not {"sparse_softmax_cross_entropy", "argmax", "equal", "cast", "sum"} & set(names)
    assert pass_module.run(roots) is roots                     # a backend that did not ask


def test_the_count_of_a_softmax_reads_its_logits():
    """argmax(softmax(z)) is argmax(z): the softmax that only the accuracy read goes; an order
    that is not kept (a per-row value minus the scores) stops the walk."""
    z, y = placeholder((None, 5), "float32"), placeholder((None,), "int64")
    hits = ops.sum(ops.cast(ops.equal(ops.argmax(ops.softmax(z), -1), y), "float32"))
    rewritten = pass_module.run([hits], rewrites=REWRITES)
    assert _names(rewritten) == ["placeholder", "placeholder", "argmax_hits"]
    assert rewritten[0].inputs[0] is z
    flipped = ops.max(z, -1, keepdims=True) - z                # the order reversed
    hits = ops.sum(ops.cast(ops.equal(ops.argmax(ops.exp(flipped), -1), y), "float32"))
    assert pass_module.run([hits], rewrites=REWRITES)[0].inputs[0] is not z
    shifted = z + placeholder((None, 5), "float32")            # not one value per row
    hits = ops.sum(ops.cast(ops.equal(ops.argmax(shifted, -1), y), "float32"))
    assert pass_module.run([hits], rewrites=REWRITES)[0].inputs[0].op.name == "add"


def test_a_16_bit_softmax_is_counted_as_it_is():
    """Rounded to 16 bits, neighbouring probabilities often tie, and their argmax (what Keras
    counts) is not the logits': the count reads the 16-bit values, not the logits."""
    y = placeholder((None,), "int64")
    for z, scores in [(placeholder((None, 5), "float16"), None),
                      (placeholder((None, 5), "float32"), "float16"),
                      (placeholder((None, 5), "float32"), "bfloat16")]:
        probabilities = ops.softmax(z) if scores is None else \
            ops.cast(ops.softmax(z), scores)
        hits = ops.sum(ops.cast(ops.equal(ops.argmax(probabilities, -1), y), "float32"))
        rewritten = pass_module.run([hits], rewrites=REWRITES)[0]
        assert rewritten.op.name == "argmax_hits" and rewritten.inputs[0] is probabilities


def test_pass_leaves_values_that_are_read_elsewhere():
    z, y, (rows, top), hits, roots = _head()
    kept = _names(pass_module.run(roots + [rows, hits], rewrites=REWRITES))   # outputs
    assert "sparse_cross_entropy_total" not in kept and "argmax_hits" not in kept
    other = _names(pass_module.run(roots + [ops.exp(rows) + top], rewrites=REWRITES))
    assert "sparse_cross_entropy_total" not in other and "argmax_hits" not in other
    partial = ops.sum(rows, keepdims=True), ops.sum(ops.cast(ops.equal(
        ops.argmax(z, 0), ops.cast(z[:, 0], "int64")), "float32"))    # argmax over the rows
    assert "argmax_hits" not in _names(pass_module.run(list(partial), rewrites=REWRITES))
    assert "sparse_cross_entropy_total" not in _names(pass_module.run(list(partial),
                                                                      rewrites=REWRITES))


def test_rewritten_head_runs_with_the_unfused_values(numba_backend, monkeypatch):
    """On numba (which asks for the rewrite) a step gives the unfused step's numbers."""
    z, y, _, _, roots = _head((None, 4, 6))
    rng = np.random.default_rng(7)
    logits = (rng.standard_normal((9, 4, 6)) * 3).astype(np.float32)
    labels = rng.integers(0, 6, (9, 4))
    rewritten = Function([z, y], roots)
    got = rewritten(logits, labels)
    assert "argmax_hits" in _names(rewritten.optimized()[0])
    monkeypatch.setenv("HIAPI_PASSES", "-classification_totals")
    plain = Function([z, y], roots)
    expected = plain(logits, labels)
    assert "argmax_hits" not in _names(plain.optimized()[0])
    np.testing.assert_allclose(got[0], expected[0], rtol=1e-6)
    assert got[1:] == expected[1:]


def _classifier(loss, activation):
    hiapi.utils.set_random_seed(5)
    model = hiapi.Sequential([hiapi.Input(shape=(12,)), layers.Dense(16, activation="relu"),
                              layers.Dense(4, activation=activation)])
    model.compile(optimizer="adam", loss=loss, metrics=["accuracy"])
    return model


@pytest.mark.parametrize("loss,activation,built", [
    (hiapi.losses.SparseCategoricalCrossentropy(from_logits=True), None,
     {"sparse_cross_entropy_total", "argmax_hits"}),
    ("sparse_categorical_crossentropy", "softmax",        # the loss takes the logits
     {"sparse_cross_entropy_total", "argmax_hits"}),
    ("sparse_categorical_crossentropy", "sigmoid", {"argmax_hits"})])  # a loss of scores
def test_fit_and_evaluate_give_the_unfused_numbers(numba_backend, monkeypatch, loss,
                                                   activation, built):
    """The train and test steps of a compiled classifier take the rewrite; the losses,
    accuracies and weights of a fit and an evaluate are those without it (to float32
    rounding of the loss's sum)."""
    rng = np.random.default_rng(8)
    x, y = rng.standard_normal((96, 12)).astype(np.float32), rng.integers(0, 4, 96)
    results = []
    for passes in ("all", "-classification_totals"):
        monkeypatch.setenv("HIAPI_PASSES", passes)
        model = _classifier(loss, activation)
        history = model.fit(x, y, batch_size=32, epochs=2, verbose=0).history
        scores = model.evaluate(x, y, batch_size=32, verbose=0)
        names = set()
        for key, function in model._step_functions.items():
            if key[0] in ("train", "test"):
                outputs, updates = function.optimized()
                names |= set(_names(outputs + [u for _, u in updates]))
        results.append((history, scores, model.get_weights(), names))
    (history, scores, weights, names), (plain_history, plain_scores, plain_weights, _) = results
    assert built <= names
    assert history["accuracy"] == plain_history["accuracy"]
    np.testing.assert_allclose(history["loss"], plain_history["loss"], rtol=1e-6)
    assert scores[1] == plain_scores[1]
    assert scores[0] == pytest.approx(plain_scores[0], rel=1e-6)
    for w, plain in zip(weights, plain_weights):
        np.testing.assert_allclose(w, plain, rtol=1e-5, atol=1e-6)
