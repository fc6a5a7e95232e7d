"""SGD's trajectory against Keras's published update rule written in plain numpy."""
import numpy as np
import pytest

from hiapi.graph import Function, Variable, grad, placeholder
from hiapi.optimizers import SGD


def _run_hiapi(optimizer, w0, targets, lrs):
    w = Variable(w0.copy(), name="w")
    t = placeholder(w0.shape, "float64")
    loss = ((w.read - t) * (w.read - t)).sum() * 0.5     # gradient: w - t
    (g,) = grad(loss, [w.read])
    step = Function([t] + optimizer.step_inputs(), loss, optimizer.get_updates([g], [w]))
    for target, rate in zip(targets, lrs):
        optimizer.learning_rate = rate
        step(target, *optimizer.step_values())
    return w.numpy()


def _run_numpy(momentum, nesterov, w0, targets, lrs):
    w, v = w0.copy(), np.zeros_like(w0)
    for target, lr in zip(targets, lrs):
        lr = np.float64(np.float32(lr))
        g = w - target
        v = momentum * v - lr * g
        w = w + (momentum * v - lr * g if nesterov else v)
    return w


@pytest.mark.parametrize("momentum, nesterov", [(0.0, False), (0.9, False), (0.9, True)])
def test_sgd_matches_formula(momentum, nesterov):
    rng = np.random.default_rng(0)
    w0 = rng.normal(size=(3, 2))
    targets = [rng.normal(size=(3, 2)) for _ in range(5)]
    lrs = [0.1, 0.05, 0.2, 0.1, 0.01]     # changing the rate needs no recompilation
    got = _run_hiapi(SGD(learning_rate=0.1, momentum=momentum, nesterov=nesterov), w0,
                     targets, lrs)
    np.testing.assert_allclose(got, _run_numpy(momentum, nesterov, w0, targets, lrs),
                               rtol=1e-12)


def test_sgd_counts_iterations_and_validates():
    optimizer = SGD(0.1)
    _run_hiapi(optimizer, np.zeros(2), [np.ones(2)] * 3, [0.1] * 3)
    assert int(optimizer.iterations.numpy()) == 3
    with pytest.raises(ValueError, match="momentum must be in"):
        SGD(momentum=1.5)
    with pytest.raises(ValueError, match="learning_rate must be a positive"):
        SGD(learning_rate=-1.0)
