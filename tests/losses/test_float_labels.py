"""Class labels given as floats (``y.astype("float32")``, common in Keras examples) are
accepted wherever integer labels are, when they hold whole numbers; any other float is refused
with its value, eagerly and inside compiled graphs (the ``integral_indices`` op checks at run
time), so nothing is silently truncated to a class."""
import numpy as np
import pytest

from check_op import check_op

import hiapi
from hiapi import layers
from hiapi.graph import Function, ops, placeholder

RNG = np.random.default_rng(5)
LABELS = np.array([0, 2, 1, 2, 0])
PROBS = RNG.dirichlet(np.ones(3), size=5).astype("float32")


def test_integral_indices_op_forward_and_run_time_refusal():
    floats = LABELS.astype("float64")
    check_op(lambda v: ops.class_indices(v, "labels"), [floats], lambda v: v.astype(np.int64),
             batch=True, grad_inputs=())
    x = placeholder((None,), "float32")
    run = Function([x], ops.class_indices(x, "my_loss"))
    np.testing.assert_array_equal(run(floats.astype("float32")), LABELS)
    for bad, shown in ((1.5, "1.5"), (np.nan, "nan"), (np.inf, "inf"), (-0.25, "-0.25")):
        with pytest.raises(ValueError, match=rf"my_loss: class labels must be whole numbers.*"
                                             rf"got {shown}"):
            run(np.array([1.0, bad, 2.0], "float32"))
    assert ops.class_indices(placeholder((None,), "int32")).dtype == np.int64


def test_one_hot_takes_integral_floats_eagerly_and_in_graphs():
    want = hiapi.ops.one_hot(LABELS, 3)
    np.testing.assert_array_equal(hiapi.ops.one_hot(LABELS.astype("float32"), 3), want)
    x = placeholder((None,), "float32")
    np.testing.assert_array_equal(Function([x], ops.one_hot(x, 3))(LABELS.astype("float32")),
                                  want)
    with pytest.raises(ValueError, match=r"one_hot: class labels must be whole numbers.*2\.5"):
        hiapi.ops.one_hot(np.array([1.0, 2.5]), 3)
    with pytest.raises(ValueError, match=r"one_hot:.*got 0\.5"):
        Function([x], ops.one_hot(x, 3))(np.array([0.5], "float32"))


def test_sparse_losses_and_ops_take_integral_floats():
    floats = LABELS.astype("float32")
    for fn in (hiapi.losses.sparse_categorical_crossentropy,
               hiapi.ops.sparse_categorical_crossentropy,
               hiapi.losses.SparseCategoricalCrossentropy()):
        np.testing.assert_allclose(fn(floats, PROBS), fn(LABELS, PROBS), rtol=1e-6)
        with pytest.raises(ValueError, match=r"whole numbers.*got 1\.5"):
            fn(np.array([0, 1.5, 2, 0, 1], "float32"), PROBS)
    logits = np.log(PROBS)
    np.testing.assert_allclose(
        hiapi.ops.sparse_categorical_crossentropy(floats, logits, from_logits=True),
        hiapi.ops.sparse_categorical_crossentropy(LABELS, logits, from_logits=True), rtol=1e-6)


@pytest.mark.parametrize("metric", [hiapi.metrics.SparseCategoricalAccuracy,
                                    lambda: hiapi.metrics.SparseTopKCategoricalAccuracy(k=2),
                                    hiapi.metrics.SparseCategoricalCrossentropy])
def test_sparse_metrics_take_integral_floats(metric):
    as_int, as_float = metric(), metric()
    as_int.update_state(LABELS, PROBS)
    as_float.update_state(LABELS.astype("float32")[:, None], PROBS)
    assert float(as_float.result()) == pytest.approx(float(as_int.result()))
    with pytest.raises(ValueError, match=r"whole numbers.*got 0\.5"):
        metric().update_state(np.array([0.5, 1, 2, 0, 1], "float32"), PROBS)


def model():
    hiapi.utils.set_random_seed(0)
    net = hiapi.Sequential([hiapi.Input((4,)), layers.Dense(3, activation="softmax")])
    net.compile(optimizer="sgd", loss="sparse_categorical_crossentropy",
                metrics=["accuracy", "sparse_top_k_categorical_accuracy"])
    return net


def test_fit_and_evaluate_with_float_labels_equal_integer_labels():
    x = RNG.normal(size=(32, 4)).astype("float32")
    y = RNG.integers(0, 3, 32)
    with_ints = model().fit(x, y, epochs=2, batch_size=8, shuffle=False, verbose=0)
    floats = model()
    with_floats = floats.fit(x, y.astype("float32"), epochs=2, batch_size=8, shuffle=False,
                             verbose=0)
    assert with_floats.history == with_ints.history
    assert floats.evaluate(x, y.astype("float64"), verbose=0) == \
        pytest.approx(floats.evaluate(x, y, verbose=0))
    with pytest.raises(ValueError, match=r"whole numbers.*got 1\.5"):
        floats.fit(x[:2], np.array([0.0, 1.5]), verbose=0)


def test_a_custom_loss_with_one_hot_refuses_a_fraction_at_run_time():
    def one_hot_mse(y_true, y_pred):
        return hiapi.ops.mean(hiapi.ops.square(hiapi.ops.one_hot(y_true, 3) - y_pred), axis=-1)
    net = hiapi.Sequential([hiapi.Input((4,)), layers.Dense(3, activation="softmax")])
    net.compile(optimizer="sgd", loss=one_hot_mse)
    x = np.ones((2, 4), "float32")
    net.fit(x, np.array([1.0, 2.0], "float32"), verbose=0)
    with pytest.raises(ValueError, match=r"one_hot: class labels must be whole numbers.*2\.5"):
        net.fit(x, np.array([1.0, 2.5], "float32"), verbose=0)
