"""Every op of hiapi.graph.ops (elementwise, reduce, shape, linalg, nn) through ``check_op``:
forward against numpy written plainly here, float64 finite-difference gradients, and second
derivatives. Inputs keep clear of kinks (relu/abs at 0, ties in max/maximum) so finite
differences are valid; ties get their own test with the expected split written out."""
import numpy as np
import pytest

from check_op import check_op
from hiapi.graph import Function, grad, ops, placeholder

RNG = np.random.default_rng(1234)


def normal(*shape):
    return RNG.standard_normal(shape)


def uniform(low, high, *shape):
    return RNG.uniform(low, high, shape)


def off_zero(*shape):
    """Values with |x| in [0.2, 1.5]: no kink of relu/abs within finite-difference reach."""
    return RNG.choice([-1.0, 1.0], shape) * RNG.uniform(0.2, 1.5, shape)


def odd_grid(*shape):
    """Odd multiples of 0.1; with ``even_grid`` no two values tie (they differ by >= 0.1)."""
    return (2 * RNG.integers(-8, 8, shape) + 1) * 0.1


def even_grid(*shape):
    return 2 * RNG.integers(-8, 8, shape) * 0.1


def distinct(*shape):
    """Distinct values 0.3 apart (no ties for max), shuffled."""
    n = int(np.prod(shape))
    return (RNG.permutation(n) * 0.3 - 0.15 * n).reshape(shape)


def sigmoid_ref(x):
    return 1.0 / (1.0 + np.exp(-x))


def log_softmax_ref(x, axis=-1):
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


# ---------------------------------------------------------------- unary


UNARY = [
    ("negative", ops.negative, np.negative, normal(3, 4)),
    ("exp", ops.exp, np.exp, uniform(-2, 2, 3, 4)),
    ("log", ops.log, np.log, uniform(0.5, 3, 3, 4)),
    ("sqrt", ops.sqrt, np.sqrt, uniform(0.5, 3, 3, 4)),
    ("tanh", ops.tanh, np.tanh, uniform(-2, 2, 3, 4)),
    ("sigmoid", ops.sigmoid, sigmoid_ref, uniform(-4, 4, 3, 4)),
    ("relu", ops.relu, lambda x: np.where(x > 0, x, 0.0), off_zero(3, 4)),
    ("abs", ops.abs, np.abs, off_zero(3, 4)),
    ("square", ops.square, np.square, normal(3, 4)),
    ("identity", ops.identity, lambda x: x, normal(3, 4)),
    ("operator_neg", lambda x: -x, np.negative, normal(2, 3)),
]


@pytest.mark.parametrize("build, reference, x", [pytest.param(*c[1:], id=c[0]) for c in UNARY])
def test_unary(build, reference, x):
    check_op(build, [x], reference, batch=True, double=True)


def test_sigmoid_saturates_without_overflow():
    x = np.array([[-800.0, -30.0, 0.0, 30.0, 800.0]])
    out = check_op(ops.sigmoid, [x], lambda x: np.array([[0.0, 0.0, 0.5, 1.0, 1.0]]),
                   atol=1e-12)
    np.testing.assert_allclose(out[0, 1], 9.357622968840175e-14, rtol=1e-12)


def test_cast_float64_to_float32():
    # float32 rounding (~6e-8 relative) needs a wide step for finite differences
    x = normal(3, 4)
    out = check_op(lambda x: ops.cast(x, "float32"), [x], lambda x: x.astype(np.float32),
                   batch=True, eps=1e-3, atol=1e-4, rtol=1e-4)
    assert out.dtype == np.float32


def test_cast_float32_to_float64_is_exact():
    x = normal(3, 4)
    check_op(lambda x: ops.cast(ops.cast(x, "float32"), "float64") * 3.0, [x],
             lambda x: x.astype(np.float32).astype(np.float64) * 3.0, eps=1e-3, atol=1e-4,
             rtol=1e-4)


def test_cast_to_int_has_no_gradient():
    x = placeholder((3,), "float64")
    y = ops.cast(x, "int32")
    assert Function([x], y)(np.array([1.7, -2.2, 3.0])).tolist() == [1, -2, 3]
    assert grad(ops.cast(y, "float64").sum(), [x]) == [None]


def test_stop_gradient():
    x_value = uniform(0.5, 2, 2, 3)
    out = check_op(ops.stop_gradient, [x_value], lambda x: x, grad_inputs=())
    assert out.dtype == np.float64
    x = placeholder((None, 3), "float64")
    assert grad(ops.stop_gradient(x).sum(), [x]) == [None]
    # d/dx [x * stop(x)] is stop(x) = x, not 2x: only the unstopped path contributes
    (dx,) = grad((x * ops.stop_gradient(x)).sum(), [x])
    np.testing.assert_allclose(Function([x], dx)(x_value), x_value)


# ---------------------------------------------------------------- binary, with broadcasting


def positive(*shape):
    return uniform(0.5, 2.0, *shape)


def exponent(*shape):
    return uniform(-1.5, 2.0, *shape)


# op name -> (builder, numpy reference, sampler for a, sampler for b)
BINARY = {
    "add": (ops.add, np.add, normal, normal),
    "subtract": (ops.subtract, np.subtract, normal, normal),
    "multiply": (ops.multiply, np.multiply, normal, normal),
    "divide": (ops.divide, np.divide, normal, off_zero),
    "power": (ops.power, np.power, positive, exponent),
    "maximum": (ops.maximum, np.maximum, odd_grid, even_grid),
    "minimum": (ops.minimum, np.minimum, odd_grid, even_grid),
}

# (shape of a, shape of b, which placeholders get a None batch axis)
SHAPES = [
    ((3, 4), (3, 4), (True, True)),
    ((3, 4), (4,), (True, False)),
    ((3, 1), (1, 4), (True, False)),
    ((2, 3, 4), (3, 1), (True, False)),
    ((), (3, 4), (False, True)),
    ((3, 4), (), (True, False)),
]


@pytest.mark.parametrize("shape_a, shape_b, batch",
                         [pytest.param(*s, id=f"{s[0]}-{s[1]}") for s in SHAPES])
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_broadcast(name, shape_a, shape_b, batch):
    build, reference, sample_a, sample_b = BINARY[name]
    check_op(build, [sample_a(*shape_a), sample_b(*shape_b)], reference, batch=batch,
             double=True)


@pytest.mark.parametrize("build, reference, x", [
    pytest.param(lambda x: 2.0 - x, lambda x: 2.0 - x, normal(3, 4), id="rsub"),
    pytest.param(lambda x: 1.5 / x, lambda x: 1.5 / x, off_zero(3, 4), id="rtruediv"),
    pytest.param(lambda x: 2.0 ** x, lambda x: 2.0 ** x, normal(3, 4), id="rpow"),
    pytest.param(lambda x: x ** 3, lambda x: x ** 3, normal(3, 4), id="pow_int"),
    pytest.param(lambda x: 3.0 * x + 1.0, lambda x: 3.0 * x + 1.0, normal(3, 4),
                 id="rmul_add"),
])
def test_python_scalar_operand(build, reference, x):
    check_op(build, [x], reference, batch=True, double=True)


@pytest.mark.parametrize("shape_c, shape_a, shape_b", [
    ((3, 4), (3, 4), (3, 4)),
    ((3, 4), (3, 4), (4,)),
    ((3, 1), (1, 4), ()),
    ((4,), (2, 3, 4), (3, 1)),
])
def test_where(shape_c, shape_a, shape_b):
    cond = RNG.random(shape_c) > 0.5
    check_op(ops.where, [cond, normal(*shape_a), normal(*shape_b)], np.where, double=True)


@pytest.mark.parametrize("name", ["greater", "greater_equal", "less", "less_equal", "equal",
                                  "not_equal"])
def test_comparison(name):
    # small integers make ties, so equal / *_equal see both outcomes
    a = RNG.integers(-2, 3, (3, 4)).astype(np.float64)
    b = RNG.integers(-2, 3, (4,)).astype(np.float64)
    out = check_op(getattr(ops, name), [a, b], getattr(np, name), batch=(True, False))
    assert out.dtype == np.bool_


def test_comparison_operators():
    a, b = normal(3, 4), normal(3, 4)
    check_op(lambda a, b: ops.where(a > b, a, b) + ops.where(a <= b, a, b), [a, b],
             lambda a, b: np.maximum(a, b) + np.minimum(a, b), double=True)


# ---------------------------------------------------------------- reductions


AXES = [None, 1, -1, (0, 2), (-1, -3)]
REDUCE = {"sum": (ops.sum, np.sum), "max": (ops.max, np.max), "mean": (ops.mean, np.mean)}


@pytest.mark.parametrize("keepdims", [False, True], ids=["", "keepdims"])
@pytest.mark.parametrize("axis", AXES, ids=[str(a) for a in AXES])
@pytest.mark.parametrize("name", sorted(REDUCE))
def test_reduce(name, axis, keepdims):
    build, reference = REDUCE[name]
    check_op(lambda x: build(x, axis, keepdims), [distinct(2, 3, 4)],
             lambda x: reference(x, axis=axis, keepdims=keepdims), batch=True, double=True)


def test_max_splits_gradient_between_ties():
    x = placeholder((None, 3), "float64")
    (dx,) = grad(ops.max(x, axis=1).sum(), [x])
    got = Function([x], dx)(np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0], [0.0, -1.0, 5.0]]))
    np.testing.assert_allclose(got, [[0, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3], [0, 0, 1]])


def test_mean_of_integers_is_float64():
    out = check_op(lambda x: ops.mean(x, axis=0), [RNG.integers(0, 10, (4, 3))],
                   lambda x: x.mean(axis=0), batch=True)
    assert out.dtype == np.float64


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_argmax(axis):
    out = check_op(lambda x: ops.argmax(x, axis), [distinct(3, 4)],
                   lambda x: np.argmax(x, axis=axis), batch=True)
    assert out.dtype == np.int64


@pytest.mark.parametrize("axis", [None, 0, (0, 2), -1])
def test_size(axis):
    x = normal(5, 3, 2)
    axes = range(3) if axis is None else [axis] if isinstance(axis, int) else axis
    out = check_op(lambda x: ops.size(x, axis), [x],
                   lambda x: np.float64(np.prod([x.shape[a] for a in axes])), batch=True)
    assert out.shape == () and out.dtype == np.float64


def test_one_hot():
    indices = np.array([3, 0, 4, 4, 1])
    out = check_op(lambda i: ops.one_hot(i, 5, "float64"), [indices],
                   lambda i: np.eye(5)[i], batch=True)
    assert out.dtype == np.float64


@pytest.mark.parametrize("shape_x, shape_like", [((4,), (3, 4)), ((3, 1), (2, 3, 4)),
                                                 ((1, 4), (3, 4)), ((3, 4), (3, 4))])
def test_broadcast_like(shape_x, shape_like):
    like = normal(*shape_like)
    check_op(lambda x, like: ops.broadcast_like(x, like), [normal(*shape_x), like],
             lambda x, like: np.broadcast_to(x, like.shape), batch=(False, True), double=True)


# ---------------------------------------------------------------- shape ops


@pytest.mark.parametrize("shape, batch", [((4, -1), False), ((6, 4), False), ((-1, 12), True),
                                          ((-1,), True), ((2, 3, 2, 2), False)])
def test_reshape(shape, batch):
    check_op(lambda x: ops.reshape(x, shape), [normal(2, 3, 4)], lambda x: x.reshape(shape),
             batch=batch, double=True)


def test_reshape_method():
    check_op(lambda x: x.reshape(-1, 3) * 2.0, [normal(4, 3, 2)],
             lambda x: x.reshape(-1, 3) * 2.0, batch=True)


@pytest.mark.parametrize("axes", [None, (1, 0, 2), (2, 0, 1), (-1, 0, -2)])
def test_transpose(axes):
    check_op(lambda x: ops.transpose(x, axes), [normal(2, 3, 4)],
             lambda x: np.transpose(x, axes), batch=True, double=True)


@pytest.mark.parametrize("axis", [0, 1, -1, (0, 2), (-1, 1)])
def test_expand_dims(axis):
    check_op(lambda x: ops.expand_dims(x, axis), [normal(3, 4)],
             lambda x: np.expand_dims(x, axis), batch=True, double=True)


@pytest.mark.parametrize("axis", [1, -1, (1, 3), (-3, 3)])
def test_squeeze(axis):
    check_op(lambda x: ops.squeeze(x, axis), [normal(3, 1, 4, 1)],
             lambda x: np.squeeze(x, axis), batch=True, double=True)


# ---------------------------------------------------------------- linalg


@pytest.mark.parametrize("shape_a, shape_b, batch", [
    ((3, 4), (4, 5), (True, False)),
    ((2, 3, 4), (2, 4, 5), (True, True)),
    ((2, 3, 4), (4, 5), (True, False)),
    ((4, 5), (2, 5, 3), (False, True)),
    ((1, 3, 4), (2, 4, 5), (False, True)),
])
def test_matmul(shape_a, shape_b, batch):
    check_op(ops.matmul, [normal(*shape_a), normal(*shape_b)], np.matmul, batch=batch,
             double=True)


def test_matmul_operator_and_transpose():
    check_op(lambda a, b: a @ b.T, [normal(3, 4), normal(5, 4)], lambda a, b: a @ b.T,
             batch=(True, False), double=True)


@pytest.mark.parametrize("transpose_a", [False, True])
def test_gemm(transpose_a):
    """alpha * a @ b + beta * c, with a as given or a transposed view (as the weight-gradient
    GEMM reads x.T); every input, the scalars too, gets its gradient checked."""
    a = normal(4, 3) if transpose_a else normal(3, 4)

    def build(a, b, c, alpha, beta):
        return ops.gemm(ops.transpose(a) if transpose_a else a, b, c, alpha, beta)

    def reference(a, b, c, alpha, beta):
        return alpha * ((a.T if transpose_a else a) @ b) + beta * c
    check_op(build, [a, normal(4, 5), normal(3, 5), np.array(-0.3), np.array(0.9)], reference,
             double=True)


def test_gemm_shape_errors():
    a, b = placeholder((3, 4)), placeholder((4, 5))
    with pytest.raises(ValueError, match=r"gemm: c has shape \(3, 4\)"):
        ops.gemm(a, b, placeholder((3, 4)))
    with pytest.raises(ValueError, match="alpha and beta must be scalars"):
        ops.gemm(a, b, placeholder((3, 5)), placeholder((1,)))
    with pytest.raises(ValueError, match="must be 2-D"):
        ops.gemm(placeholder((2, 3, 4)), b, placeholder((2, 3, 5)))


# ---------------------------------------------------------------- nn


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax(axis):
    check_op(lambda x: ops.softmax(x, axis), [normal(3, 4)],
             lambda x: np.exp(log_softmax_ref(x, axis)), batch=True, double=True)


@pytest.mark.parametrize("axis", [-1, 0])
def test_log_softmax(axis):
    check_op(lambda x: ops.log_softmax(x, axis), [normal(3, 4)],
             lambda x: log_softmax_ref(x, axis), batch=True, double=True)


def test_softmax_large_logits_are_stable():
    x = np.array([[1000.0, 0.0, -1000.0], [-5e4, -5e4, -5e4]])
    check_op(ops.softmax, [x], lambda x: np.array([[1.0, 0.0, 0.0], [1 / 3, 1 / 3, 1 / 3]]),
             atol=1e-12)


def soft_labels(rows, classes, total=1.0):
    p = RNG.uniform(0.1, 1.0, (rows, classes))
    return total * p / p.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("labels", [soft_labels(4, 5), soft_labels(4, 5, total=1.7)],
                         ids=["normalized", "unnormalized"])
def test_softmax_cross_entropy(labels):
    check_op(ops.softmax_cross_entropy, [normal(4, 5), labels],
             lambda x, t: -(t * log_softmax_ref(x)).sum(axis=-1), grad_inputs=(0, 1),
             batch=True, double=True)


def test_softmax_cross_entropy_3d():
    labels = soft_labels(6, 3).reshape(2, 3, 3)
    check_op(ops.softmax_cross_entropy, [normal(2, 3, 3), labels],
             lambda x, t: -(t * log_softmax_ref(x)).sum(axis=-1), batch=True, double=True)


def test_sparse_softmax_cross_entropy():
    labels = np.array([4, 0, 2, 2])
    out = check_op(ops.sparse_softmax_cross_entropy, [normal(4, 5), labels],
                   lambda x, t: -log_softmax_ref(x)[np.arange(4), t], batch=True, double=True)
    assert out.shape == (4,)


def test_gather_repeated_indices_accumulate():
    indices = np.array([[0, 2, 2], [4, 0, 2]])
    check_op(ops.gather, [normal(5, 3), indices], lambda t, i: t[i], batch=(False, True),
             double=True)


def test_scatter_add_like():
    indices = np.array([1, 1, 3, 0])
    like = normal(5, 3)

    def reference(updates, indices, like):
        out = np.zeros_like(like)
        np.add.at(out, indices, updates)
        return out
    check_op(ops.scatter_add_like, [normal(4, 3), indices, like], reference,
             batch=(True, True, False), double=True)
