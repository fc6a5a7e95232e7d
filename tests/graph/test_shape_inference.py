"""Static shape and dtype inference (with the symbolic batch size None), the named errors for
shapes that cannot work, and what a compiled Function checks and caches per input shape."""
import numpy as np
import pytest

from hiapi.graph import Function, constant, grad, ops, placeholder


def batch(*shape, dtype="float32"):
    return placeholder((None,) + shape, dtype)


# ---------------------------------------------------------------- inferred shapes


@pytest.mark.parametrize("build, shape", [
    (lambda: batch(3) @ placeholder((3, 4)), (None, 4)),
    (lambda: batch(2, 3) @ placeholder((3, 4)), (None, 2, 4)),
    (lambda: placeholder((5, 3)) @ batch(3, 4), (None, 5, 4)),
    (lambda: batch(3) + placeholder((3,)), (None, 3)),
    (lambda: batch(1) * placeholder((4,)), (None, 4)),
    (lambda: placeholder((2, 1, 4)) - placeholder((3, 1)), (2, 3, 4)),
    (lambda: batch(3) > 0.0, (None, 3)),
    (lambda: ops.where(batch(3) > 0.0, batch(3), 0.0), (None, 3)),
    (lambda: ops.reshape(batch(2, 3), (-1, 6)), (None, 6)),
    (lambda: ops.reshape(batch(2, 3), (-1,)), (None,)),
    (lambda: ops.reshape(placeholder((2, 3, 4)), (4, -1)), (4, 6)),
    (lambda: batch(2, 3).reshape(3, -1), (3, None)),
    (lambda: ops.transpose(batch(2, 3)), (3, 2, None)),
    (lambda: ops.expand_dims(batch(3), (0, -1)), (1, None, 3, 1)),
    (lambda: ops.squeeze(batch(1, 3, 1), (1, -1)), (None, 3)),
    (lambda: ops.sum(batch(3, 4), axis=1), (None, 4)),
    (lambda: ops.sum(batch(3, 4), axis=(0, -1), keepdims=True), (1, 3, 1)),
    (lambda: ops.mean(batch(3, 4)), ()),
    (lambda: ops.max(batch(3, 4), axis=-2, keepdims=True), (None, 1, 4)),
    (lambda: ops.argmax(batch(3, 4)), (None, 3)),
    (lambda: ops.argmax(batch(3, 4), axis=None), ()),
    (lambda: ops.size(batch(3), axis=0), ()),
    (lambda: ops.broadcast_like(placeholder((3,)), batch(2, 3)), (None, 2, 3)),
    (lambda: ops.one_hot(batch(dtype="int32"), 10), (None, 10)),
    (lambda: ops.gather(placeholder((10, 4)), batch(5, dtype="int64")), (None, 5, 4)),
    (lambda: ops.softmax_cross_entropy(batch(5), batch(5)), (None,)),
    (lambda: ops.sparse_softmax_cross_entropy(batch(5), batch(dtype="int64")), (None,)),
], ids=["matmul", "matmul_3d_2d", "matmul_2d_3d", "add", "multiply_stretch", "subtract_3d",
    "greater", "where", "reshape_minus1", "reshape_flat", "reshape_static", "reshape_method",
    "transpose", "expand_dims", "squeeze", "sum", "sum_keepdims", "mean_all", "max_keepdims",
    "argmax", "argmax_flat", "size", "broadcast_like", "one_hot", "gather",
    "softmax_cross_entropy", "sparse_softmax_cross_entropy"])
def test_inferred_shape(build, shape):
    assert build().shape == shape


@pytest.mark.parametrize("build, dtype", [
    (lambda: batch(3) * 2.0, "float32"),
    (lambda: 2.0 * batch(3), "float32"),
    (lambda: batch(3) + 1, "float32"),
    (lambda: batch(3) ** 2, "float32"),
    (lambda: 1.0 / batch(3), "float32"),
    (lambda: ops.maximum(batch(3), 0.5), "float32"),
    (lambda: ops.where(batch(3) > 0, batch(3), 0.0), "float32"),
    (lambda: batch(3) * constant(np.ones(3)), "float64"),   # a float64 array promotes
    (lambda: batch(3, dtype="float64") * batch(3), "float64"),
    (lambda: batch(3, dtype="int32") * 2.0, "float64"),
    (lambda: batch(3, dtype="int32") / batch(3, dtype="int32"), "float64"),
    (lambda: ops.sum(batch(3, dtype="bool")), "int64"),
    (lambda: ops.mean(batch(3, dtype="int32")), "float64"),
    (lambda: ops.mean(batch(3)), "float32"),
    (lambda: ops.argmax(batch(3)), "int64"),
    (lambda: batch(3) >= 0.0, "bool"),
    (lambda: ops.one_hot(batch(dtype="int64"), 3), "float32"),
    (lambda: ops.softmax(batch(3)), "float32"),
], ids=["mul_weak_float", "rmul_weak_float", "add_weak_int", "pow_weak_int", "rdiv_weak_float",
    "maximum_weak", "where_weak", "float64_array_promotes", "float64_var_promotes",
    "int_times_float", "int_true_divide", "sum_bool", "mean_int", "mean_float32", "argmax",
    "compare", "one_hot", "softmax"])
def test_inferred_dtype(build, dtype):
    assert build().dtype == np.dtype(dtype)


def test_weak_python_scalar_keeps_float32_when_run():
    x = batch(3)
    f = Function([x], [x * 2.0, 2.0 - x, x / 3.0, x ** 2.0])
    for out in f(np.ones((2, 3), np.float32)):
        assert out.dtype == np.float32
    (dx,) = grad((x * 2.0).sum(), [x])
    assert dx.dtype == np.float32 and Function([x], dx)(np.ones((2, 3))).dtype == np.float32


# ---------------------------------------------------------------- named errors


def test_broadcast_clash_names_both_shapes():
    with pytest.raises(ValueError, match=r"add: shapes \(None, 3\), \(4,\) do not broadcast"):
        batch(3) + placeholder((4,))
    with pytest.raises(ValueError, match=r"\(2, 3\), \(3, 2\)"):
        ops.maximum(placeholder((2, 3)), placeholder((3, 2)))


def test_matmul_inner_mismatch_names_both_shapes():
    with pytest.raises(ValueError, match=r"\(None, 3\) @ \(4, 5\) \(3 != 4\)"):
        ops.matmul(batch(3), placeholder((4, 5)))
    with pytest.raises(ValueError, match=r"rank >= 2.*\(3,\)"):
        ops.matmul(placeholder((3,)), placeholder((3, 2)))


@pytest.mark.parametrize("build", [
    lambda x: ops.sum(x, axis=2),
    lambda x: ops.max(x, axis=-3),
    lambda x: ops.mean(x, axis=(0, 5)),
    lambda x: ops.argmax(x, axis=2),
    lambda x: ops.expand_dims(x, 4),
    lambda x: ops.softmax(x, axis=3),
], ids=["sum", "max", "mean", "argmax", "expand_dims", "softmax"])
def test_bad_axis(build):
    with pytest.raises(ValueError, match="axis .* out of range for an input of rank"):
        build(batch(3))


def test_repeated_axis_and_bad_permutation():
    with pytest.raises(ValueError, match="repeated axis"):
        ops.sum(batch(3), axis=(1, -1))
    with pytest.raises(ValueError, match="not a permutation"):
        ops.transpose(batch(3, 4), (0, 1, 1))
    with pytest.raises(ValueError, match=r"squeeze: axis 1 of shape \(None, 3\) has size 3"):
        ops.squeeze(batch(3), 1)


def test_reshape_errors():
    with pytest.raises(ValueError, match=r"cannot reshape \(2, 3\) \(6 elements\) into "
                                         r"\(4, 2\) \(8 elements\)"):
        ops.reshape(placeholder((2, 3)), (4, 2))
    with pytest.raises(ValueError, match=r"cannot reshape \(2, 3\).*into \(4, -1\)"):
        ops.reshape(placeholder((2, 3)), (4, -1))
    with pytest.raises(ValueError, match="at most one -1"):
        ops.reshape(placeholder((2, 3)), (-1, -1))
    with pytest.raises(ValueError, match=r"unknown dimension.*needs a -1"):
        ops.reshape(batch(2, 3), (2, 3))


def test_cross_entropy_label_errors():
    with pytest.raises(TypeError, match="labels must be integers, got dtype bool"):
        ops.sparse_softmax_cross_entropy(batch(5), batch(dtype="bool"))
    with pytest.raises(ValueError, match=r"labels of shape \(None, 2\) must have the logits' "
                                         r"shape \(None, 5\) without its last axis"):
        ops.sparse_softmax_cross_entropy(batch(5), batch(2, dtype="int64"))
    with pytest.raises(ValueError, match=r"labels of shape \(3,\).*must have"):
        ops.sparse_softmax_cross_entropy(placeholder((4, 5)), placeholder((3,), "int64"))
    with pytest.raises(ValueError, match=r"labels of shape \(None, 4\) must have the shape "
                                         r"of the logits \(None, 5\)"):
        ops.softmax_cross_entropy(batch(5), batch(4))
    with pytest.raises(ValueError, match=r"labels of shape \(4,\) must have the shape"):
        ops.softmax_cross_entropy(placeholder((4, 4)), placeholder((4,)))


@pytest.mark.parametrize("build, error, message", [
    (lambda: ops.exp(batch(3, dtype="int32")), TypeError, "exp: expected a floating-point"),
    (lambda: ops.where(batch(3), 1.0, 0.0), TypeError, "condition must be boolean"),
    (lambda: ops.one_hot(batch(dtype="bool"), 3), TypeError, "indices must be integers"),
    (lambda: ops.gather(placeholder((5, 2)), batch()), TypeError, "indices must be integers"),
    (lambda: ops.broadcast_like(placeholder((2, 3)), batch()), ValueError,
     r"cannot broadcast \(2, 3\) to \(None,\)"),
    (lambda: ops.broadcast_like(placeholder((2, 3)), batch(4)), ValueError,
     r"shapes \(2, 3\), \(None, 4\) do not broadcast"),
])
def test_op_specific_errors(build, error, message):
    with pytest.raises(error, match=message):
        build()


# ---------------------------------------------------------------- Function


def test_function_rejects_wrong_shape_naming_expected_and_got():
    x = placeholder((None, 3), name="features")
    f = Function([x], x * 2.0, name="double")
    with pytest.raises(ValueError, match=r"'double': features expects shape \(None, 3\), "
                                         r"got an array of shape \(2, 4\)"):
        f(np.ones((2, 4)))
    with pytest.raises(ValueError, match=r"expects shape \(None, 3\), got an array of "
                                         r"shape \(3,\)"):
        f(np.ones(3))
    with pytest.raises(ValueError, match="takes 1 inputs, got 2"):
        f(np.ones((2, 3)), np.ones((2, 3)))


def test_a_call_like_the_last_skips_no_check_a_different_one_needs():
    """A batch of the last call's type, shape and dtype goes straight to its executable;
    any other is converted and checked as before (a dtype, a list, a wrong shape)."""
    x = placeholder((None, 3), name="features")
    f = Function([x], x * 2.0, name="double")
    np.testing.assert_array_equal(f(np.ones((2, 3), np.float32)), np.full((2, 3), 2.0))
    np.testing.assert_array_equal(f(np.full((2, 3), 3.0)), np.full((2, 3), 6.0))   # float64
    out = f([[1.0, 2.0, 3.0]] * 2)                                                  # a list
    assert out.dtype == np.float32 and out.tolist() == [[2.0, 4.0, 6.0]] * 2
    with pytest.raises(ValueError, match=r"expects shape \(None, 3\), got an array of "
                                         r"shape \(2, 4\)"):
        f(np.ones((2, 4), np.float32))
    np.testing.assert_array_equal(f(np.ones((5, 3), np.float32)), np.full((5, 3), 2.0))
    assert len(f._executables) == 2


def test_batch_sizes_that_clash_at_compile_time():
    a, b = batch(3), batch(3)
    f = Function([a, b], a + b)
    with pytest.raises(ValueError, match=r"\(2, 3\), \(5, 3\) do not broadcast.*while "
                                         r"compiling"):
        f(np.ones((2, 3)), np.ones((5, 3)))


def test_one_executable_per_batch_size():
    x = batch(3)
    f = Function([x], ops.sum(x * 2.0, axis=1))
    np.testing.assert_allclose(f(np.ones((4, 3))), [6.0] * 4)
    np.testing.assert_allclose(f(np.ones((1, 3))), [6.0])
    np.testing.assert_allclose(f(np.ones((4, 3))), [6.0] * 4)
    assert len(f._executables) == 2


def test_function_outputs_match_inferred_shapes_for_each_batch():
    x = batch(2, 3)
    outs = [ops.reshape(x, (-1, 6)), ops.transpose(x, (1, 0, 2)), ops.mean(x, axis=0),
            ops.argmax(x, axis=None)]
    f = Function([x], outs)
    for n in (1, 3):
        got = f(np.arange(n * 6, dtype=np.float32).reshape(n, 2, 3))
        assert [g.shape for g in got] == [(n, 6), (2, n, 3), (2, 3), ()]
        assert got[3] == n * 6 - 1


def test_gradient_of_batch_of_one_broadcast_against_a_known_size():
    x = batch(3, dtype="float64")
    w = placeholder((5, 3), "float64")
    (dx,) = grad((x * w).sum(), [x])
    got = Function([x, w], dx)(np.ones((1, 3)), np.full((5, 3), 2.0))
    np.testing.assert_array_equal(got, np.full((1, 3), 10.0))
