"""Adadelta, Adamax and Nadam over several steps against their published update rules (in
Keras 3's formulation), written here in plain numpy; and their string names."""
import numpy as np
import pytest

import hiapi
from hiapi import optimizers
from tests.optimizers.test_optimizers import f32, problem, run_hiapi  # noqa: F401 (fixture)


def numpy_adadelta(weights, gradients, lr, rho, eps):
    out = []
    for i, w in enumerate(weights):
        w, acc_g, acc_dx = w.copy(), np.zeros_like(w), np.zeros_like(w)
        for gs in gradients:
            g = gs[i]
            acc_g = rho * acc_g + (1 - rho) * g * g
            delta = -np.sqrt(acc_dx + eps) / np.sqrt(acc_g + eps) * g
            acc_dx = rho * acc_dx + (1 - rho) * delta * delta
            w = w + f32(lr) * delta
        out.append(w)
    return out


def numpy_adamax(weights, gradients, lr, b1, b2, eps):
    out = []
    for i, w in enumerate(weights):
        w, m, u = w.copy(), np.zeros_like(w), np.zeros_like(w)
        for t, gs in enumerate(gradients, start=1):
            g = gs[i]
            m = m + (g - m) * (1 - b1)
            u = np.maximum(b2 * u, np.abs(g))
            w = w - f32(lr) * m / ((1 - b1 ** t) * (u + eps))
        out.append(w)
    return out


def numpy_nadam(weights, gradients, lr, b1, b2, eps):
    mu = lambda t: b1 * (1 - 0.5 * 0.96 ** (0.004 * t))
    out = []
    for i, w in enumerate(weights):
        w, m, v, product = w.copy(), np.zeros_like(w), np.zeros_like(w), 1.0
        for t, gs in enumerate(gradients, start=1):
            g = gs[i]
            product = product * mu(t)
            m = m + (g - m) * (1 - b1)
            v = v + (g * g - v) * (1 - b2)
            m_hat = mu(t + 1) * m / (1 - product * mu(t + 1)) + (1 - mu(t)) * g / (1 - product)
            v_hat = v / (1 - b2 ** t)
            w = w - f32(lr) * m_hat / (np.sqrt(v_hat) + eps)
        out.append(w)
    return out


@pytest.mark.parametrize("make, reference", [
    (lambda: optimizers.Adadelta(0.5, rho=0.9, epsilon=1e-6),
     lambda w, g: numpy_adadelta(w, g, 0.5, 0.9, 1e-6)),
    (lambda: optimizers.Adamax(0.01, beta_1=0.8, beta_2=0.99),
     lambda w, g: numpy_adamax(w, g, 0.01, 0.8, 0.99, 1e-7)),
    (lambda: optimizers.Nadam(0.01, beta_1=0.85, beta_2=0.99, epsilon=1e-6),
     lambda w, g: numpy_nadam(w, g, 0.01, 0.85, 0.99, 1e-6)),
])
def test_against_the_published_rule(problem, make, reference):  # noqa: F811
    weights, gradients = problem
    got = run_hiapi(make(), weights, gradients)
    for g, e in zip(got, reference(weights, gradients)):
        np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name, cls, defaults", [
    ("adadelta", optimizers.Adadelta, {"learning_rate": 0.001, "rho": 0.95, "epsilon": 1e-7}),
    ("adamax", optimizers.Adamax, {"learning_rate": 0.001, "beta_1": 0.9, "beta_2": 0.999,
                                   "epsilon": 1e-7}),
    ("nadam", optimizers.Nadam, {"learning_rate": 0.001, "beta_1": 0.9, "beta_2": 0.999,
                                 "epsilon": 1e-7}),
])
def test_string_names_and_keras_defaults(name, cls, defaults):
    optimizer = optimizers.get(name)
    assert type(optimizer) is cls and optimizer.name == name
    config = optimizer.get_config()
    assert {k: config[k] for k in defaults} == defaults
    copy = optimizers.deserialize(optimizers.serialize(optimizer))
    assert type(copy) is cls and copy.get_config() == config


def test_nadam_trains_saves_and_resumes(tmp_path):
    """The shared momentum-schedule product is optimizer state: a reloaded Nadam continues
    exactly as the uninterrupted one."""
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(64, 3)).astype(np.float32), rng.normal(size=(64, 1))

    def make():
        hiapi.utils.set_random_seed(1)
        model = hiapi.Sequential([hiapi.Input((3,)), hiapi.layers.Dense(1)])
        model.compile(optimizer="nadam", loss="mse")
        return model

    straight = make()
    straight.fit(x, y, epochs=2, batch_size=16, shuffle=False, verbose=0)
    first = make()
    first.fit(x, y, epochs=1, batch_size=16, shuffle=False, verbose=0)
    first.save(tmp_path / "m.hiapi")
    resumed = hiapi.models.load_model(tmp_path / "m.hiapi")
    assert resumed.optimizer._u_product.numpy() == first.optimizer._u_product.numpy() != 1.0
    resumed.fit(x, y, epochs=2, initial_epoch=1, batch_size=16, shuffle=False, verbose=0)
    for a, b in zip(straight.get_weights(), resumed.get_weights()):
        np.testing.assert_array_equal(a, b)
