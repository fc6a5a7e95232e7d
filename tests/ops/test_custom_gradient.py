"""ops.custom_gradient (a user function with its own backward, one op to autodiff) and
ops.check_gradient, the finite-difference check users run on it; on every CPU backend."""
import numpy as np
import pytest

import hiapi
from hiapi import ops
from hiapi.graph import Function, grad, placeholder


@ops.custom_gradient
def log1pexp(x):
    e = ops.exp(x)

    def grad_fn(*args, upstream=None):
        if upstream is None:
            (upstream,) = args
        return upstream * (1.0 - 1.0 / (1.0 + e))
    return ops.log(1.0 + e), grad_fn


@ops.custom_gradient
def scaled_product(a, b):
    def grad_fn(g):
        return g * b, g * a
    return a * b, grad_fn


def test_the_users_backward_is_used(cpu_backend):
    x = placeholder((None,), "float32")
    (g,) = grad(ops.sum(log1pexp(x)), [x])
    got = Function([x], [log1pexp(x), g])(np.array([0.0, 50.0], "float32"))
    np.testing.assert_allclose(got[0], [np.log(2.0), 50.0], rtol=1e-6)
    np.testing.assert_allclose(got[1], [0.5, 1.0], rtol=1e-6)

    @ops.custom_gradient
    def marked(x):
        return x * 1.0, lambda g: g * 0.0 + 7.0        # not the true derivative: it is used
    (g,) = grad(ops.sum(marked(x)), [x])
    np.testing.assert_array_equal(Function([x], g)(np.ones(3, "float32")), [7.0] * 3)


def test_finite_difference_check_passes_a_right_rule_and_names_a_wrong_one(cpu_backend):
    assert ops.check_gradient(log1pexp, np.array([0.5, -2.0, 3.0])) < 1e-6
    assert ops.check_gradient(scaled_product, np.array([[1.0, 2.0]]),
                              np.array([[3.0, -1.0]])) < 1e-6

    @ops.custom_gradient
    def wrong(x):
        return x * 2.0, lambda g: g * 3.0

    with pytest.raises(AssertionError, match=r"wrong.*input 0"):
        ops.check_gradient(wrong, np.array([0.5, 1.0]))


def test_a_gradient_list_of_the_wrong_length_is_named():
    @ops.custom_gradient
    def two_inputs(a, b):
        return a + b, lambda g: g

    a, b = placeholder((2,), "float64"), placeholder((2,), "float64")
    with pytest.raises(ValueError, match=r"two_inputs.*1 gradients for 2"):
        grad(ops.sum(two_inputs(a, b)), [a])


def test_on_arrays_it_computes_the_forward_value():
    np.testing.assert_allclose(log1pexp(np.array([0.0], "float32")), [np.log(2.0)], rtol=1e-6)
