"""Convolution, pooling, concatenate/slice/pad, sum_like and random_uniform through
``check_op``: forward against direct numpy loops written here, float64 finite-difference
gradients, and second derivatives (the conv and pooling gradient ops are each other's
transposes, so double backward is graph too)."""
import numpy as np
import pytest

from check_op import check_op
from numpy_references import conv2d as conv_reference, pool2d as pool_reference
from hiapi.graph import Function, ops, placeholder

RNG = np.random.default_rng(99)


CONVS = [   # (input hw, kernel hw, strides, padding, dilation, groups)
    ((5, 6), (3, 3), (1, 1), "valid", (1, 1), 1),
    ((6, 6), (2, 2), (2, 2), "same", (1, 1), 1),
    ((5, 7), (4, 3), (2, 3), "same", (1, 1), 1),
    ((7, 7), (3, 3), (1, 1), "same", (2, 2), 1),
    ((5, 5), (3, 3), (1, 1), "valid", (1, 1), 2),
]


@pytest.mark.parametrize("hw, khw, strides, padding, dilation, groups", CONVS)
def test_conv2d(hw, khw, strides, padding, dilation, groups):
    x = RNG.normal(size=(2,) + hw + (4,))
    w = RNG.normal(size=khw + (4 // groups, 4))
    check_op(lambda a, b: ops.conv2d(a, b, strides, padding, dilation, groups), [x, w],
             lambda a, b: conv_reference(a, b, strides, padding, dilation, groups),
             batch=[True, False], double=True)


@pytest.mark.parametrize("hw, khw, strides, padding, dilation, groups", CONVS[:3])
def test_conv2d_gradient_ops(hw, khw, strides, padding, dilation, groups):
    """The two gradient ops on their own: each is the adjoint of conv2d in one argument."""
    x = RNG.normal(size=(2,) + hw + (4,))
    w = RNG.normal(size=khw + (4 // groups, 4))
    g = RNG.normal(size=conv_reference(x, w, strides, padding, dilation, groups).shape)
    conv = dict(strides=strides, padding=padding, dilation=dilation, groups=groups)
    dx = check_op(lambda a, b: ops.conv2d_input_grad(a, b, hw, **conv), [g, w], double=True)
    dw = check_op(lambda a, b: ops.conv2d_filter_grad(a, b, khw, **conv), [x, g], double=True)
    # adjointness: <conv(x, w), g> == <x, dx(g, w)> == <w, dw(x, g)>
    forward = (conv_reference(x, w, strides, padding, dilation, groups) * g).sum()
    assert (x * dx).sum() == pytest.approx(forward, rel=1e-10)
    assert (w * dw).sum() == pytest.approx(forward, rel=1e-10)


POOLS = [((6, 6), (2, 2), (2, 2), "valid"), ((5, 7), (2, 2), (2, 2), "same"),
         ((5, 5), (3, 3), (1, 1), "same"), ((7, 6), (3, 2), (2, 1), "valid")]


def distinct(shape):
    return (RNG.permutation(int(np.prod(shape))) * 0.1).reshape(shape)


@pytest.mark.parametrize("hw, pool, strides, padding", POOLS)
def test_max_pool2d(hw, pool, strides, padding):
    x = distinct((2,) + hw + (3,))           # no ties: finite differences are valid
    check_op(lambda a: ops.max_pool2d(a, pool, strides, padding), [x],
             lambda a: pool_reference(a, pool, strides, padding, "max"), batch=True,
             double=True)


@pytest.mark.parametrize("hw, pool, strides, padding", POOLS)
def test_avg_pool2d(hw, pool, strides, padding):
    x = RNG.normal(size=(2,) + hw + (3,))
    check_op(lambda a: ops.avg_pool2d(a, pool, strides, padding), [x],
             lambda a: pool_reference(a, pool, strides, padding, "avg"), batch=True,
             double=True)


@pytest.mark.parametrize("hw, pool, strides, padding", POOLS[:2])
def test_pool_gradient_ops(hw, pool, strides, padding):
    x = distinct((2,) + hw + (3,))
    pooled = pool_reference(x, pool, strides, padding, "max").shape
    args = dict(pool_size=pool, strides=strides, padding=padding)
    g, u = RNG.normal(size=pooled), RNG.normal(size=x.shape)
    scatter = check_op(lambda a, b: ops.max_pool_scatter(a, b, **args), [x, g],
                       grad_inputs=[1], double=True)
    gather = check_op(lambda a, b: ops.max_pool_gather(a, b, **args), [x, u],
                      grad_inputs=[1], double=True)
    assert (scatter * u).sum() == pytest.approx((gather * g).sum(), rel=1e-10)   # adjoint
    check_op(lambda a: ops.avg_pool_grad(a, hw, **args), [g], double=True)


def test_max_pool_gradient_goes_to_the_first_maximum():
    x = np.zeros((1, 2, 2, 1))
    xv = placeholder((1, 2, 2, 1), "float64")
    from hiapi.graph import grad
    (dx,) = grad(ops.max_pool2d(xv, 2).sum(), [xv])
    np.testing.assert_array_equal(Function([xv], dx)(x)[0, :, :, 0], [[1, 0], [0, 0]])


def test_concatenate_slice_pad():
    a, b = RNG.normal(size=(3, 2)), RNG.normal(size=(3, 4))
    check_op(lambda p, q: ops.concatenate([p, q], axis=1), [a, b],
             lambda p, q: np.concatenate([p, q], 1), batch=True, double=True)
    x = RNG.normal(size=(4, 5, 3))
    check_op(lambda v: ops.slice_axis(v, 1, 1, -1), [x], lambda v: v[:, 1:-1], double=True)
    check_op(lambda v: ops.pad(v, ((0, 0), (2, 1), (0, 3))), [x],
             lambda v: np.pad(v, ((0, 0), (2, 1), (0, 3))), batch=True, double=True)
    parts = ops.split(placeholder((None, 6)), [1, 2, 3])
    assert [p.shape for p in parts] == [(None, 1), (None, 2), (None, 3)]


def test_concatenate_along_the_batch_axis():
    """Sizes known only at run time: the gradient cuts at them (concat_piece), to any order."""
    a, b, c = RNG.normal(size=(2, 3)), RNG.normal(size=(1, 3)), RNG.normal(size=(4, 3))
    check_op(lambda p, q, r: ops.concatenate([p, q, r], axis=0), [a, b, c],
             lambda p, q, r: np.concatenate([p, q, r], 0), batch=True, double=True)


def test_sum_like():
    g = RNG.normal(size=(4, 3))
    like = RNG.normal(size=(1, 3))
    check_op(lambda a, b: ops.reduce.SumLike()(a, b), [g, like],
             lambda a, b: a.sum(0, keepdims=True), grad_inputs=[0], double=True)


def test_random_uniform_is_counter_based():
    like = placeholder((None, 1000))
    counter = placeholder((), "int64")
    f = Function([like, counter], ops.random_uniform(like, 7, counter))
    x = np.zeros((3, 1000), np.float32)
    a, b, again = f(x, 0), f(x, 1), f(x, 0)
    np.testing.assert_array_equal(a, again)                  # same seed and counter
    assert not np.array_equal(a, b)                          # next step: a new draw
    assert a.dtype == np.float32 and a.min() >= 0 and a.max() < 1
    assert abs(a.mean() - 0.5) < 0.02 and abs(a.var() - 1 / 12) < 0.01
    other_seed = Function([like, counter], ops.random_uniform(like, 8, counter))(x, 0)
    assert not np.array_equal(a, other_seed)
