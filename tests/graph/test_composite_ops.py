"""The composite ops (min, argmin, prod, var, std, clip, stack) through ``check_op``: forward
against numpy, float64 finite-difference gradients, second derivatives; prod's gradient where an
element is zero (where ``y / x`` would fail), and its shape errors."""
import numpy as np
import pytest

from check_op import check_op
from hiapi.graph import ops, placeholder

RNG = np.random.default_rng(7)


def distinct(*shape):
    n = int(np.prod(shape))
    return (RNG.permutation(n) * 0.3 - 0.15 * n).reshape(shape)


CASES = [
    ("min_axis", lambda x: ops.min(x, 1), lambda x: x.min(1), distinct(3, 4)),
    ("min_keepdims", lambda x: ops.min(x, 0, keepdims=True), lambda x: x.min(0, keepdims=True),
     distinct(3, 4)),
    ("prod_axis", lambda x: ops.prod(x, 1), lambda x: x.prod(1), RNG.uniform(0.5, 1.5, (3, 5))),
    ("prod_two_axes_keepdims", lambda x: ops.prod(x, (1, 2), keepdims=True),
     lambda x: x.prod((1, 2), keepdims=True), RNG.uniform(0.5, 1.5, (2, 3, 3))),
    ("prod_middle_axis", lambda x: ops.prod(x, 1), lambda x: x.prod(1),
     RNG.uniform(-1.5, 1.5, (2, 7, 3))),
    ("var", lambda x: ops.var(x, -1), lambda x: x.var(-1), RNG.normal(size=(3, 5))),
    ("std_keepdims", lambda x: ops.std(x, 1, keepdims=True), lambda x: x.std(1, keepdims=True),
     RNG.normal(size=(3, 5))),
    ("clip", lambda x: ops.clip(x, -0.5, 0.5), lambda x: np.clip(x, -0.5, 0.5),
     distinct(3, 4) + 0.05),
]


@pytest.mark.parametrize("build, reference, x", [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_composite(build, reference, x):
    check_op(build, [x], reference, batch=True, double=True)


def test_prod_over_every_axis_of_a_known_shape():
    check_op(lambda x: ops.prod(x), [RNG.uniform(0.5, 1.5, (2, 3))], lambda x: x.prod(),
             double=True)


def test_prod_gradient_with_a_zero_element():
    x = np.array([[2.0, 0.0, 3.0, 5.0]])
    check_op(lambda v: ops.prod(v, 1), [x], lambda v: v.prod(1))   # d/dx1 = 30, not nan


def test_stack_and_argmin():
    a, b = RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4))
    check_op(lambda x, y: ops.stack([x, y], 1), [a, b], lambda x, y: np.stack([x, y], 1),
             batch=True, double=True)
    check_op(lambda x: ops.stack([x], -1), [a], lambda x: x[..., None], batch=True)
    check_op(lambda x: ops.argmin(x, 1), [distinct(3, 4)], lambda x: x.argmin(1), batch=True)


def test_shape_errors_name_the_op():
    with pytest.raises(ValueError, match="prod: axis 0 .* unknown size"):
        ops.prod(placeholder((None, 3)), 0)
    with pytest.raises(ValueError, match="stack: all inputs must have the same shape"):
        ops.stack([placeholder((2, 3)), placeholder((2, 4))])
    with pytest.raises(ValueError, match="stack: needs at least one input"):
        ops.stack([])


@pytest.mark.parametrize("key", [(slice(None), 0), (Ellipsis, None), (slice(None), slice(1, 3), -1),
                                 (None, slice(None), 1, slice(0, 2)), (Ellipsis, 2)],
                         ids=["int", "newaxis", "slice_and_negative", "mixed", "ellipsis"])
def test_getitem(key):
    x = RNG.normal(size=(2, 3, 4))
    check_op(lambda v: v[key], [x], lambda v: v[key], batch=True, double=True)


def test_getitem_errors():
    x = placeholder((None, 3))
    with pytest.raises(ValueError, match="step 1 only"):
        x[:, ::2]
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 1"):
        x[:, 3]
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0]
    with pytest.raises(TypeError, match="integers, slices, None"):
        x[[0, 1]]


def test_keras_ops_composites_differentiate():
    """hiapi.ops's composites (tile, repeat, take, norm, gelu, normalize) on symbolic inputs:
    gradients from their primitives, checked against finite differences."""
    from hiapi import ops as K
    x = RNG.normal(size=(2, 3))
    check_op(lambda v: K.tile(v, (1, 2)), [x], lambda v: np.tile(v, (1, 2)), batch=True)
    check_op(lambda v: K.repeat(v, 2, axis=1), [x], lambda v: np.repeat(v, 2, 1), batch=True)
    check_op(lambda v: K.take(v, [2, 0, 2], axis=1), [x], lambda v: v[:, [2, 0, 2]],
             batch=True)
    check_op(lambda v: K.norm(v, axis=-1), [x], lambda v: np.linalg.norm(v, axis=-1),
             batch=True, double=True)
    check_op(K.gelu, [x], lambda v: 0.5 * v * (1 + np.tanh(np.sqrt(2 / np.pi)
                                                        * (v + 0.044715 * v ** 3))),
             batch=True, double=True)
    check_op(K.normalize, [x], lambda v: v / np.linalg.norm(v, axis=-1, keepdims=True),
             batch=True)


def test_more_keras_ops_composites_differentiate():
    from hiapi import ops as K
    x = RNG.normal(size=(2, 3)) * 2
    check_op(lambda v: K.logsumexp(v, axis=-1), [x], lambda v: np.log(np.exp(v).sum(-1)),
             batch=True, double=True)
    check_op(K.log_sigmoid, [x], lambda v: -np.log1p(np.exp(-v)), batch=True, double=True)
    check_op(K.selu, [RNG.choice([-1.0, 1.0], (2, 3)) * RNG.uniform(0.2, 1.5, (2, 3))],
             lambda v: 1.0507009873554805 * np.where(v > 0, v, 1.6732632423543772 *
                                                     np.expm1(v)), batch=True)
    w = np.array([1.0, 2.0, 0.5])
    check_op(lambda v: K.average(v, axis=1, weights=w), [x],
             lambda v: np.average(v, axis=1, weights=w), batch=True, double=True)
    check_op(K.tril, [RNG.normal(size=(2, 3, 3))], np.tril, batch=True)


def test_keras_conv_and_pool_ops_differentiate():
    from hiapi import ops as K
    seq = RNG.normal(size=(2, 3, 6))                     # channels_first 1-D
    w = RNG.normal(size=(2, 3, 2))
    check_op(lambda v, k: K.conv(v, k, data_format="channels_first"), [seq, w],
             batch=(True, False))
    check_op(lambda v: K.average_pool(v, 2), [RNG.normal(size=(2, 4, 4, 2))], batch=True)
