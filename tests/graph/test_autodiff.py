"""``grad`` on composite graphs: second derivatives against analytic forms, a Hessian-vector
product against finite differences of the gradient, fan-out, unrelated inputs, Variables."""
import numpy as np
import pytest

from hiapi.graph import Function, Variable, grad, ops, placeholder

RNG = np.random.default_rng(7)


def test_second_derivative_of_tanh_times_cube():
    x = placeholder((None,), "float64")
    y = (ops.tanh(x) * x ** 3).sum()
    (dx,) = grad(y, [x])
    (ddx,) = grad(dx.sum(), [x])   # elementwise y: the Hessian is diagonal
    xv = RNG.uniform(-2, 2, 7)
    t = np.tanh(xv)
    first = (1 - t ** 2) * xv ** 3 + 3 * t * xv ** 2
    second = -2 * t * (1 - t ** 2) * xv ** 3 + 6 * (1 - t ** 2) * xv ** 2 + 6 * t * xv
    got_first, got_second = Function([x], [dx, ddx])(xv)
    np.testing.assert_allclose(got_first, first, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got_second, second, rtol=1e-12, atol=1e-12)


def test_third_derivative_of_cube():
    x = placeholder((3,), "float64")
    d = (x * x * x).sum()
    for _ in range(3):
        (d,) = grad(d.sum(), [x])
    np.testing.assert_allclose(Function([x], d)(np.array([1.0, -2.0, 0.5])), [6.0] * 3)


def _mlp_loss(params, data, labels):
    w1, b1, w2 = params
    hidden = ops.tanh(ops.matmul(data, w1) + b1)
    return ops.mean(ops.softmax_cross_entropy(ops.matmul(hidden, w2), labels))


def test_hessian_vector_product_of_mlp_matches_finite_differences():
    shapes = [(3, 4), (4,), (4, 2)]
    params = [placeholder(s, "float64", name=f"p{i}") for i, s in enumerate(shapes)]
    data = placeholder((None, 3), "float64")
    labels = placeholder((None, 2), "float64")
    loss = _mlp_loss(params, data, labels)
    grads = grad(loss, params)
    vs = [placeholder(s, "float64") for s in shapes]
    hvp = grad(sum((g * v).sum() for g, v in zip(grads, vs)), params)
    gradient = Function(params + [data, labels], grads)
    hessian_times = Function(params + [data, labels] + vs, hvp)

    theta = [RNG.standard_normal(s) for s in shapes]
    direction = [RNG.standard_normal(s) for s in shapes]
    x = RNG.standard_normal((5, 3))
    t = np.eye(2)[RNG.integers(0, 2, 5)]
    eps = 1e-5
    up = gradient(*[p + eps * v for p, v in zip(theta, direction)], x, t)
    down = gradient(*[p - eps * v for p, v in zip(theta, direction)], x, t)
    got = hessian_times(*theta, x, t, *direction)
    for g, u, d in zip(got, up, down):
        np.testing.assert_allclose(g, (u - d) / (2 * eps), rtol=1e-6, atol=1e-8)


def test_fan_out_contributions_are_summed():
    x = placeholder((None, 2), "float64")
    y = (x * ops.tanh(x) + x).sum()   # x feeds three ops
    (dx,) = grad(y, [x])
    xv = RNG.standard_normal((3, 2))
    t = np.tanh(xv)
    np.testing.assert_allclose(Function([x], dx)(xv), t + xv * (1 - t ** 2) + 1, rtol=1e-12)


def test_same_var_as_both_operands():
    x = placeholder((4,), "float64")
    (dx,) = grad((x * x).sum() + (x / x).sum(), [x])
    xv = np.array([1.0, -2.0, 3.0, 0.5])
    np.testing.assert_allclose(Function([x], dx)(xv), 2 * xv, atol=1e-12)


def test_unrelated_and_integer_inputs_get_none():
    x = placeholder((3,), "float64")
    z = placeholder((3,), "float64")
    i = placeholder((3,), "int64")
    y = (x * 2.0).sum() + ops.cast(ops.argmax(ops.reshape(z, (1, 3))), "float64").sum()
    dx, dz, di = grad(y, [x, z, i])
    assert dx is not None and dz is None and di is None


def test_gradient_with_respect_to_an_intermediate():
    x = placeholder((3,), "float64")
    h = ops.exp(x)
    (dh,) = grad((h * h).sum(), [h])
    xv = np.array([0.1, -0.3, 0.7])
    np.testing.assert_allclose(Function([x], dh)(xv), 2 * np.exp(xv), rtol=1e-12)


def test_non_scalar_y_needs_grad_y():
    x = placeholder((None, 3), "float64")
    with pytest.raises(ValueError, match=r"scalar.*\(None, 3\).*grad_y"):
        grad(ops.tanh(x), [x])


def test_grad_y_gives_vector_jacobian_product():
    x = placeholder((2, 3), "float64")
    gy = placeholder((2, 3), "float64")
    (dx,) = grad(ops.exp(x), [x], grad_y=gy)
    xv, gv = RNG.standard_normal((2, 3)), RNG.standard_normal((2, 3))
    np.testing.assert_allclose(Function([x, gy], dx)(xv, gv), gv * np.exp(xv), rtol=1e-12)


def test_gradient_through_variable_read():
    w = Variable(np.array([[1.0, -2.0], [0.5, 3.0], [2.0, 1.0]]), name="w", dtype="float64")
    x = placeholder((None, 3), "float64")
    loss = (ops.matmul(x, w.read) ** 2).sum()
    (dw,) = grad(loss, [w.read])
    assert dw.shape == (3, 2)
    xv = RNG.standard_normal((4, 3))
    expected = 2 * xv.T @ (xv @ w.numpy())
    np.testing.assert_allclose(Function([x], dw)(xv), expected, rtol=1e-12)
    w.assign(np.zeros((3, 2)))   # the compiled graph reads the Variable's current value
    np.testing.assert_allclose(Function([x], dw)(xv), np.zeros((3, 2)), atol=0)


def test_gradients_are_graph_that_batch_sizes_reuse():
    x = placeholder((None, 2), "float64")
    (dx,) = grad(ops.mean(ops.sigmoid(x)), [x])
    f = Function([x], dx)
    for n in (1, 5):
        xv = RNG.standard_normal((n, 2))
        s = 1 / (1 + np.exp(-xv))
        np.testing.assert_allclose(f(xv), s * (1 - s) / xv.size, rtol=1e-12)
