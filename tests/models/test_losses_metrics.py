"""Each loss and metric against its formula written in numpy."""
import numpy as np
import pytest

import hiapi
from hiapi.graph import Function, placeholder

RNG = np.random.default_rng(5)


def evaluate_loss(loss, y_true, y_pred, true_dtype="float64"):
    t = placeholder((None,) + y_true.shape[1:], true_dtype)
    p = placeholder((None,) + y_pred.shape[1:], "float64")
    return float(Function([t, p], loss(t, p))(y_true, y_pred))


def softmax(z):
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_categorical_crossentropy_with_label_smoothing_and_logits():
    logits = RNG.normal(size=(6, 4))
    labels = np.eye(4)[RNG.integers(0, 4, 6)]
    smooth = labels * 0.8 + 0.2 / 4
    expected = -(smooth * np.log(softmax(logits))).sum(-1).mean()
    loss = hiapi.losses.CategoricalCrossentropy(from_logits=True, label_smoothing=0.2)
    assert evaluate_loss(loss, labels, logits) == pytest.approx(expected, rel=1e-10)
    probs = softmax(logits)
    plain = hiapi.losses.CategoricalCrossentropy()
    assert evaluate_loss(plain, labels, probs) == pytest.approx(
        -(labels * np.log(probs)).sum(-1).mean(), rel=1e-6)


def test_sparse_crossentropy_from_probabilities_clips():
    probs = np.array([[1.0, 0.0], [0.5, 0.5]])
    loss = hiapi.losses.SparseCategoricalCrossentropy()
    got = evaluate_loss(loss, np.array([1, 0]), probs, true_dtype="int64")
    assert got == pytest.approx((-np.log(1e-7) - np.log(0.5)) / 2, rel=1e-6)


def test_binary_crossentropy_logits_and_probabilities():
    logits = RNG.normal(size=(5, 3)) * 4
    labels = RNG.integers(0, 2, (5, 3)).astype(float)
    p = 1 / (1 + np.exp(-logits))
    expected = -(labels * np.log(p) + (1 - labels) * np.log(1 - p)).mean()
    assert evaluate_loss(hiapi.losses.BinaryCrossentropy(from_logits=True), labels, logits) == \
        pytest.approx(expected, rel=1e-9)
    assert evaluate_loss(hiapi.losses.BinaryCrossentropy(), labels, p) == \
        pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize("name, formula", [
    ("mse", lambda t, p: ((p - t) ** 2).mean()),
    ("mae", lambda t, p: np.abs(p - t).mean()),
    ("huber", lambda t, p: np.where(np.abs(p - t) <= 1, 0.5 * (p - t) ** 2,
                                    np.abs(p - t) - 0.5).mean()),
    ("kl_divergence", lambda t, p: (np.clip(t, 1e-7, 1) * np.log(np.clip(t, 1e-7, 1) /
                                                              np.clip(p, 1e-7, 1))).sum(-1).mean()),
])
def test_regression_and_divergence_losses(name, formula):
    t, p = RNG.uniform(size=(6, 3)) * 2, RNG.uniform(size=(6, 3)) * 2
    assert evaluate_loss(hiapi.losses.get(name), t, p) == pytest.approx(formula(t, p), rel=1e-9)


def test_loss_from_a_function():
    loss = hiapi.losses.get(lambda t, p: hiapi.graph.ops.mean(hiapi.graph.ops.abs(p - t), -1))
    t, p = RNG.normal(size=(4, 2)), RNG.normal(size=(4, 2))
    assert evaluate_loss(loss, t, p) == pytest.approx(np.abs(p - t).mean())


def run_metric(metric, batches, true_dtype="float32"):
    for t, p in batches:
        metric.update_state(t.astype(true_dtype), p.astype(np.float32))
    return metric.result()


def test_sparse_top_k_accuracy():
    scores = RNG.normal(size=(50, 10))
    labels = RNG.integers(0, 10, 50)
    top3 = np.argsort(-scores, axis=1)[:, :3]
    expected = np.mean([labels[i] in top3[i] for i in range(50)])
    metric = hiapi.metrics.SparseTopKCategoricalAccuracy(k=3)
    assert run_metric(metric, [(labels[:20], scores[:20]), (labels[20:], scores[20:])],
                      "int64") == pytest.approx(expected)


def test_precision_recall_auc_over_batches():
    truth = RNG.integers(0, 2, 300).astype(np.float32)
    scores = np.clip(truth * 0.3 + RNG.uniform(size=300) * 0.7, 0, 1).astype(np.float32)
    batches = [(truth[i:i + 64], scores[i:i + 64]) for i in range(0, 300, 64)]
    predicted = scores > 0.5
    tp = (predicted & (truth == 1)).sum()
    precision = run_metric(hiapi.metrics.Precision(), batches)
    recall = run_metric(hiapi.metrics.Recall(), batches)
    assert precision == pytest.approx(tp / predicted.sum())
    assert recall == pytest.approx(tp / (truth == 1).sum())
    positives, negatives = scores[truth == 1], scores[truth == 0]
    exact = (positives[:, None] > negatives[None, :]).mean()   # Mann-Whitney AUC
    assert run_metric(hiapi.metrics.AUC(num_thresholds=1000), batches) == \
        pytest.approx(exact, abs=5e-3)
