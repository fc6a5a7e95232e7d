"""``argsort`` (the op behind ``hiapi.random.shuffle``): forward against numpy on every backend,
shape inference and its errors, no gradient; and the shuffle built on it differentiates as the
gather it is."""
import numpy as np
import pytest
from check_op import check_op

from hiapi import random
from hiapi.graph import ops, placeholder

RNG = np.random.default_rng(3)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_argsort_matches_numpy(axis):
    x = RNG.permutation(24).reshape(4, 6).astype(np.float32)    # distinct: one right answer
    out = check_op(lambda v: ops.argsort(v, axis=axis), [x],
                   lambda a: np.argsort(a, axis=axis), grad_inputs=(), batch=True)
    assert out.dtype == np.int64


def test_argsort_of_integers_and_its_shape():
    y = ops.argsort(placeholder((None, 5), "int32"), axis=1)
    assert y.shape == (None, 5) and y.dtype == np.int64
    check_op(lambda v: ops.argsort(v, axis=0), [np.array([3, -1, 2, 0], np.int32)],
             lambda a: np.argsort(a), grad_inputs=())


def test_argsort_has_no_gradient():
    x = placeholder((3,), "float32")
    assert ops.argsort(x).op.grad([x], None, None) == [None]


@pytest.mark.parametrize("shape, axis, message", [
    ((3, 4), 2, "argsort: axis 2 is out of range for a tensor of shape \\(3, 4\\)"),
    ((), 0, "argsort: axis 0 is out of range"),
])
def test_argsort_refuses_a_bad_axis(shape, axis, message):
    with pytest.raises(ValueError, match=message):
        ops.argsort(placeholder(shape, "float32"), axis=axis)


def test_argsort_refuses_booleans():
    with pytest.raises(TypeError, match="argsort: expected a numeric tensor, got dtype bool"):
        ops.argsort(placeholder((3,), "bool"))


@pytest.mark.parametrize("axis", [0, 1])
def test_shuffle_gradient_is_the_permutation_back(axis):
    x = RNG.normal(size=(5, 3))
    out = check_op(lambda v: random.shuffle(v, axis=axis, seed=9), [x], batch=axis == 1)
    np.testing.assert_array_equal(np.sort(out, axis=axis), np.sort(x, axis=axis))
