"""Every optimizer's trajectory over several steps against its published update rule, written
here in plain numpy. The gradient is fed directly (loss = sum(w * G), so dloss/dw = G)."""
import numpy as np
import pytest

from hiapi.graph import Function, Variable, grad, placeholder
from hiapi import optimizers

STEPS = 6


def run_hiapi(optimizer, weights, gradients, lrs=None):
    """Apply ``gradients[step][i]`` to ``weights[i]``; returns final weights and the optimizer."""
    variables = [Variable(w.copy(), name=f"layer{i}/{'kernel' if w.ndim > 1 else 'bias'}")
                 for i, w in enumerate(weights)]
    feeds = [placeholder(w.shape, "float64") for w in weights]
    loss = sum(((v.read * g).sum() for v, g in zip(variables, feeds)), start=0.0)
    grads = grad(loss, [v.read for v in variables])
    step = Function(feeds + optimizer.step_inputs(), loss,
                    optimizer.get_updates(grads, variables))
    for t, step_grads in enumerate(gradients):
        if lrs is not None:
            optimizer.learning_rate = lrs[t]
        step(*step_grads, *optimizer.step_values())
    return [v.numpy() for v in variables]


@pytest.fixture
def problem():
    rng = np.random.default_rng(7)
    weights = [rng.normal(size=(4, 3)), rng.normal(size=(3,))]
    gradients = [[rng.normal(size=w.shape) for w in weights] for _ in range(STEPS)]
    return weights, gradients


def f32(x):
    """The learning rate travels to the graph as float32."""
    return np.float64(np.float32(x))


def numpy_adam(weights, gradients, lr, b1, b2, eps, amsgrad=False, wd=None):
    out = []
    for i, w in enumerate(weights):
        w, m, v, vh = w.copy(), np.zeros_like(w), np.zeros_like(w), np.zeros_like(w)
        for t, gs in enumerate(gradients, start=1):
            g = gs[i]
            if wd:
                w = w - w * f32(lr) * wd
            m = m + (g - m) * (1 - b1)
            v = v + (g * g - v) * (1 - b2)
            if amsgrad:
                vh = np.maximum(vh, v)
            alpha = f32(lr) * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
            w = w - alpha * m / (np.sqrt(vh if amsgrad else v) + eps)
        out.append(w)
    return out


@pytest.mark.parametrize("amsgrad", [False, True])
def test_adam(problem, amsgrad):
    weights, gradients = problem
    got = run_hiapi(optimizers.Adam(0.01, amsgrad=amsgrad), weights, gradients)
    want = numpy_adam(weights, gradients, 0.01, 0.9, 0.999, 1e-7, amsgrad)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-10)


def test_adamw_decouples_weight_decay(problem):
    weights, gradients = problem
    got = run_hiapi(optimizers.AdamW(0.01, weight_decay=0.1), weights, gradients)
    want = numpy_adam(weights, gradients, 0.01, 0.9, 0.999, 1e-7, wd=0.1)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-10)


@pytest.mark.parametrize("momentum, centered", [(0.0, False), (0.5, False), (0.5, True)])
def test_rmsprop(problem, momentum, centered):
    weights, gradients = problem
    rho, eps, lr = 0.9, 1e-7, 0.01
    got = run_hiapi(optimizers.RMSprop(lr, rho=rho, momentum=momentum, centered=centered),
                    weights, gradients)
    for i, w in enumerate(weights):
        w, v, a, m = w.copy(), np.zeros_like(w), np.zeros_like(w), np.zeros_like(w)
        for gs in gradients:
            g = gs[i]
            v = rho * v + (1 - rho) * g * g
            denominator = v
            if centered:
                a = rho * a + (1 - rho) * g
                denominator = v - a * a
            step = f32(lr) * g / np.sqrt(denominator + eps)
            if momentum:
                m = momentum * m + step
                step = m
            w = w - step
        np.testing.assert_allclose(got[i], w, rtol=1e-10)


def test_adagrad(problem):
    weights, gradients = problem
    got = run_hiapi(optimizers.Adagrad(0.1), weights, gradients)
    for i, w in enumerate(weights):
        w, acc = w.copy(), np.full_like(w, 0.1)
        for gs in gradients:
            acc = acc + gs[i] ** 2
            w = w - f32(0.1) * gs[i] / np.sqrt(acc + 1e-7)
        np.testing.assert_allclose(got[i], w, rtol=1e-10)


def test_sgd_decoupled_weight_decay(problem):
    weights, gradients = problem
    got = run_hiapi(optimizers.SGD(0.1, momentum=0.9, weight_decay=0.01), weights, gradients)
    for i, w in enumerate(weights):
        w, v = w.copy(), np.zeros_like(w)
        for gs in gradients:
            w = w - w * f32(0.1) * 0.01
            v = 0.9 * v - f32(0.1) * gs[i]
            w = w + v
        np.testing.assert_allclose(got[i], w, rtol=1e-10)


@pytest.mark.parametrize("nesterov", [False, True])
def test_lars_trust_ratio_per_layer(problem, nesterov):
    """You et al. 2017, Algorithm 1: local lr = eta*||w|| / (||g|| + beta*||w||), applied to
    (g + beta*w); 1-D parameters (the bias here) are excluded and get plain SGD."""
    weights, gradients = problem
    eta, beta, lr, mu = 0.001, 0.0005, 2.0, 0.9
    got = run_hiapi(optimizers.LARS(lr, momentum=mu, weight_decay=beta, trust_coefficient=eta,
                                    nesterov=nesterov), weights, gradients)
    for i, w in enumerate(weights):
        w, v = w.copy(), np.zeros_like(w)
        for gs in gradients:
            g = gs[i]
            if w.ndim > 1:
                ratio = eta * np.linalg.norm(w) / (np.linalg.norm(g) + beta * np.linalg.norm(w))
                g = ratio * (g + beta * w)
            v = mu * v - f32(lr) * g
            w = w + (mu * v - f32(lr) * g if nesterov else v)
        np.testing.assert_allclose(got[i], w, rtol=1e-9)


def test_lars_with_zero_trust_coefficient_is_sgd(problem):
    weights, gradients = problem
    lars = run_hiapi(optimizers.LARS(0.1, momentum=0.9, trust_coefficient=0.0), weights,
                     gradients)
    sgd = run_hiapi(optimizers.SGD(0.1, momentum=0.9), weights, gradients)
    for a, b in zip(lars, sgd):
        np.testing.assert_array_equal(a, b)


def test_lars_trust_ratio_is_one_for_zero_weights():
    weights = [np.zeros((2, 2))]
    gradients = [[np.ones((2, 2))]]
    got = run_hiapi(optimizers.LARS(0.5, momentum=0.0), weights, gradients)
    np.testing.assert_allclose(got[0], -0.5 * np.ones((2, 2)))


@pytest.mark.parametrize("kind", ["clipnorm", "clipvalue", "global_clipnorm"])
def test_clipping(problem, kind):
    weights, gradients = problem
    limit = 0.5
    got = run_hiapi(optimizers.SGD(0.1, **{kind: limit}), weights, gradients)
    expected = [w.copy() for w in weights]
    for gs in gradients:
        if kind == "clipnorm":
            gs = [g * limit / max(np.linalg.norm(g), limit) for g in gs]
        elif kind == "clipvalue":
            gs = [np.clip(g, -limit, limit) for g in gs]
        else:
            norm = np.sqrt(sum((g.astype(np.float32) ** 2).sum() for g in gs))
            gs = [g * limit / max(norm, limit) for g in gs]
        expected = [w - f32(0.1) * g for w, g in zip(expected, gs)]
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_only_one_clipping_option():
    with pytest.raises(ValueError, match="at most one of clipnorm"):
        optimizers.SGD(clipnorm=1.0, clipvalue=1.0)


@pytest.mark.parametrize("make", [lambda **k: optimizers.SGD(0.1, momentum=0.9, **k),
                                  lambda **k: optimizers.Adam(0.01, **k)])
def test_gradient_accumulation_equals_the_mean_gradient(problem, make):
    """k micro-steps with accumulation == one step with the mean of their gradients."""
    weights, gradients = problem
    k = 3
    accumulated = run_hiapi(make(gradient_accumulation_steps=k), weights, gradients)
    means = [[np.mean([gradients[s][i] for s in range(j, j + k)], axis=0)
              for i in range(len(weights))] for j in range(0, STEPS, k)]
    plain = make()
    direct = run_hiapi(plain, weights, means)
    for a, b in zip(accumulated, direct):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)


def test_learning_rate_change_needs_no_recompile(problem):
    weights, gradients = problem
    lrs = [0.1, 0.05, 0.2, 0.1, 0.01, 0.3]
    got = run_hiapi(optimizers.SGD(0.1), weights, gradients, lrs=lrs)
    expected = [w.copy() for w in weights]
    for gs, lr in zip(gradients, lrs):
        expected = [w - f32(lr) * g for w, g in zip(expected, gs)]
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_schedule_is_evaluated_at_iterations(problem):
    weights, gradients = problem
    schedule = optimizers.schedules.ExponentialDecay(0.1, decay_steps=2, decay_rate=0.5)
    optimizer = optimizers.SGD(schedule)
    got = run_hiapi(optimizer, weights, gradients)
    expected = [w.copy() for w in weights]
    for step, gs in enumerate(gradients):
        expected = [w - f32(0.1 * 0.5 ** (step / 2)) * g for w, g in zip(expected, gs)]
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    assert int(optimizer.iterations.numpy()) == STEPS


def test_an_optimizer_built_for_some_variables_names_an_unknown_one():
    # Keras's guide reuses one optimizer for a second model by mistake; Keras says so, by name
    first, second = Variable(np.ones(2, np.float32)), Variable(np.ones(3, np.float32),
                                                               name="other/kernel")
    adam = optimizers.Adam(0.1)
    adam.apply([np.ones(2, np.float32)], [first])
    with pytest.raises(ValueError, match="unknown variable 'other/kernel'.*new optimizer"):
        adam.apply([np.ones(3, np.float32)], [second])
