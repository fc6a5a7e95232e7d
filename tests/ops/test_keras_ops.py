"""``hiapi.ops`` on both sides: eagerly on arrays (numpy results, Keras dtypes) and symbolically
inside graphs (compiled and run), each against numpy written plainly here."""
import numpy as np
import pytest

import hiapi
from hiapi import ops
from hiapi.graph import Function, placeholder

RNG = np.random.default_rng(11)
A = RNG.normal(size=(3, 4)).astype(np.float32)
B = RNG.normal(size=(3, 4)).astype(np.float32)
P = RNG.uniform(0.5, 2.0, size=(3, 4)).astype(np.float32)


def run_symbolic(fn, *arrays):
    """``fn`` on placeholders (batch axis None), compiled and run on ``arrays``."""
    holders = [placeholder((None,) + a.shape[1:], a.dtype) for a in arrays]
    return Function(holders, fn(*holders))(*arrays)


def both(fn, expected, *arrays, rtol=1e-5):
    eager = fn(*arrays)
    assert isinstance(eager, (np.ndarray, np.generic)), type(eager)
    np.testing.assert_allclose(eager, expected, rtol=rtol, atol=1e-6)
    np.testing.assert_allclose(run_symbolic(fn, *arrays), expected, rtol=rtol, atol=1e-6)


BINARY = [("add", np.add), ("subtract", np.subtract), ("multiply", np.multiply),
          ("divide", np.divide), ("maximum", np.maximum), ("minimum", np.minimum),
          ("equal", np.equal), ("not_equal", np.not_equal), ("greater", np.greater),
          ("greater_equal", np.greater_equal), ("less", np.less), ("less_equal", np.less_equal)]


@pytest.mark.parametrize("name, reference", BINARY, ids=[b[0] for b in BINARY])
def test_binary(name, reference):
    both(getattr(ops, name), reference(A, B), A, B)
    both(lambda x: getattr(ops, name)(x, 0.5), reference(A, np.float32(0.5)), A)


UNARY = [("negative", np.negative, A), ("abs", np.abs, A), ("exp", np.exp, A),
         ("log", np.log, P), ("sqrt", np.sqrt, P), ("square", np.square, A),
         ("tanh", np.tanh, A), ("sign", np.sign, A), ("reciprocal", np.reciprocal, P),
         ("relu", lambda x: np.maximum(x, 0), A), ("relu6", lambda x: np.clip(x, 0, 6), A * 5),
         ("sigmoid", lambda x: 1 / (1 + np.exp(-x)), A),
         ("softplus", lambda x: np.log1p(np.exp(x)), A),
         ("silu", lambda x: x / (1 + np.exp(-x)), A),
         ("leaky_relu", lambda x: np.where(x > 0, x, 0.2 * x), A),
         ("elu", lambda x: np.where(x > 0, x, np.exp(x) - 1), A)]


@pytest.mark.parametrize("name, reference, x", UNARY, ids=[u[0] for u in UNARY])
def test_unary(name, reference, x):
    both(getattr(ops, name), reference(x.astype(np.float64)), x)


def test_power_and_logical():
    both(ops.power, np.power(P, B), P, B)
    both(lambda a, b: ops.logical_and(a > 0, b > 0), (A > 0) & (B > 0), A, B)
    both(lambda a, b: ops.logical_or(a > 0, b > 0), (A > 0) | (B > 0), A, B)
    both(lambda a: ops.logical_not(a > 0), A <= 0, A)


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min", "prod", "var", "std"])
@pytest.mark.parametrize("axis, keepdims", [(1, False), (-1, True), ((1,), False)])
def test_reductions(name, axis, keepdims):
    fn = getattr(ops, name)
    both(lambda x: fn(x, axis=axis, keepdims=keepdims),
         getattr(np, name)(P.astype(np.float64), axis=axis, keepdims=keepdims), P)


def test_reductions_over_everything_eagerly():
    assert ops.sum(A) == pytest.approx(float(A.sum()), rel=1e-5)
    assert ops.prod(P) == pytest.approx(float(P.astype(np.float64).prod()), rel=1e-5)
    assert ops.argmax(A) == A.argmax() and ops.argmin(A) == A.argmin()


def test_argmax_argmin():
    both(lambda x: ops.argmax(x, axis=1), A.argmax(1), A)
    both(lambda x: ops.argmin(x, axis=-1), A.argmin(-1), A)
    both(lambda x: ops.argmax(x, axis=1, keepdims=True), A.argmax(1)[:, None], A)


def test_matmul_dot_and_vectors():
    w = RNG.normal(size=(4, 2)).astype(np.float32)
    v = RNG.normal(size=(4,)).astype(np.float32)
    both(lambda x: ops.matmul(x, w), A @ w, A)
    both(lambda x: ops.matmul(x, v), A @ v, A)
    both(lambda x: ops.dot(x, w), A.dot(w), A)
    both(lambda x: ops.dot(x, v), A.dot(v), A)
    x3 = RNG.normal(size=(2, 3, 4)).astype(np.float32)
    both(lambda x: ops.matmul(x, w), x3 @ w, x3)
    with pytest.raises(ValueError, match="dot: on symbolic tensors"):
        ops.dot(placeholder((None, 4)), np.ones((2, 4, 3)))


def test_shape_ops():
    x3 = RNG.normal(size=(2, 3, 4)).astype(np.float32)
    both(lambda x: ops.reshape(x, (-1, 12)), x3.reshape(2, 12), x3)
    both(lambda x: ops.transpose(x, (0, 2, 1)), x3.transpose(0, 2, 1), x3)
    both(lambda x: ops.swapaxes(x, 1, 2), x3.swapaxes(1, 2), x3)
    both(lambda x: ops.expand_dims(x, 1), x3[:, None], x3)
    both(lambda x: ops.squeeze(ops.expand_dims(x, -1), axis=-1), x3, x3)
    both(lambda x: ops.concatenate([x, x], axis=1), np.concatenate([x3, x3], 1), x3)
    both(lambda x: ops.stack([x, x * 2], axis=-1), np.stack([x3, x3 * 2], -1), x3)
    both(lambda x: ops.split(x, 2, axis=-1)[1], x3[..., 2:], x3)
    both(lambda x: ops.split(x, [1], axis=-1)[1], x3[..., 1:], x3)
    assert ops.shape(placeholder((None, 3))) == (None, 3) and ops.shape(x3) == (2, 3, 4)
    assert ops.squeeze(placeholder((None, 1, 3, 1))).shape == (None, 3)


def test_where_clip_cast_stop_gradient():
    both(lambda a, b: ops.where(a > 0, a, b), np.where(A > 0, A, B), A, B)
    both(lambda a: ops.clip(a, -0.5, 0.5), np.clip(A, -0.5, 0.5), A)
    both(lambda a: ops.cast(a > 0, "float32"), (A > 0).astype(np.float32), A)
    both(ops.stop_gradient, A, A)
    assert ops.cast(A, "int32").dtype == np.int32
    np.testing.assert_array_equal(ops.where(np.array([0, 1, 1]))[0], [1, 2])
    with pytest.raises(ValueError, match="one argument"):
        ops.where(placeholder((None, 3)) > 0)


def test_creation_and_likes():
    assert ops.ones((2, 3)).dtype == np.float32 and ops.zeros((2,), "int32").dtype == np.int32
    np.testing.assert_array_equal(ops.full((2,), 7.0), [7.0, 7.0])
    assert ops.arange(4).dtype == np.int32 and ops.arange(0.0, 1.0, 0.5).dtype == np.float32
    both(ops.ones_like, np.ones_like(A), A)
    both(lambda a: ops.zeros_like(a) + a, A, A)
    both(lambda a: ops.full_like(a, 3.0), np.full_like(A, 3.0), A)


def test_softmax_log_softmax_one_hot():
    both(ops.softmax, np.exp(A) / np.exp(A).sum(-1, keepdims=True), A)
    both(lambda x: ops.nn.log_softmax(x, axis=-1),
         A - np.log(np.exp(A).sum(-1, keepdims=True)), A)
    labels = np.array([0, 2, 1])
    both(lambda y: ops.one_hot(y, 3), np.eye(3, dtype=np.float32)[labels], labels)


def test_cross_entropies_eager_and_symbolic_agree():
    labels = np.array([0, 2, 1])
    probs = ops.softmax(A[:, :3].astype(np.float64))
    expected = -np.log(probs[np.arange(3), labels])
    both(lambda y, z: ops.sparse_categorical_crossentropy(y, z, from_logits=True), expected,
         labels, A[:, :3].astype(np.float64))
    both(lambda y, z: ops.categorical_crossentropy(y, ops.softmax(z)), expected,
         np.eye(3)[labels], A[:, :3].astype(np.float64))
    t = (B > 0).astype(np.float64)
    p = 1 / (1 + np.exp(-A.astype(np.float64)))
    both(lambda y, z: ops.binary_crossentropy(y, z, from_logits=True),
         -(t * np.log(p) + (1 - t) * np.log(1 - p)), t, A.astype(np.float64))


def test_convert_to_tensor_and_numpy():
    assert ops.convert_to_tensor([1.0, 2.0]).dtype == np.float32
    assert ops.convert_to_tensor([1, 2]).dtype == np.int32
    assert ops.convert_to_tensor(np.ones(2)).dtype == np.float64
    assert ops.convert_to_tensor(1, dtype="float32").dtype == np.float32
    assert isinstance(ops.convert_to_numpy([1, 2]), np.ndarray)
    assert ops.is_tensor(np.ones(2)) and ops.is_tensor(placeholder((2,)))
    with pytest.raises(ValueError, match="symbolic"):
        ops.convert_to_numpy(placeholder((None, 2)))
    with pytest.raises(ValueError, match="Invalid dtype"):
        ops.cast(A, "floaty")


def test_ops_in_a_custom_layer_train():
    class RMSNorm(hiapi.layers.Layer):
        def build(self, input_shape):
            self.scale = self.add_weight((input_shape[-1],), "ones", "scale")

        def call(self, x):
            rms = ops.sqrt(ops.mean(ops.square(x), axis=-1, keepdims=True) + 1e-6)
            return x / rms * self.scale.read

    x = RNG.normal(size=(8, 4)).astype(np.float32)
    layer = RMSNorm()
    expected = x / np.sqrt((x ** 2).mean(-1, keepdims=True) + 1e-6)
    np.testing.assert_allclose(layer(x), expected, rtol=1e-5)


def test_more_math_on_both_sides():
    both(ops.sin, np.sin(A), A)
    both(ops.cos, np.cos(A), A)
    both(ops.log1p, np.log1p(P), P)
    both(ops.expm1, np.expm1(A), A)
    both(lambda x: ops.any(x > 1.0, axis=1), (A > 1.0).any(1), A)
    both(lambda x: ops.all(x > -1.0, axis=-1, keepdims=True), (A > -1.0).all(-1, keepdims=True),
         A)
    both(lambda x: ops.norm(x, axis=-1), np.linalg.norm(A, axis=-1), A)
    both(lambda x: ops.norm(x, ord=1, axis=1, keepdims=True),
         np.abs(A).sum(1, keepdims=True), A)
    both(lambda x: ops.moments(x, axes=[1])[1], A.var(1), A)
    both(lambda x: ops.normalize(x), A / np.linalg.norm(A, axis=-1, keepdims=True), A)
    both(lambda x: ops.tile(x, (1, 2)), np.tile(A, (1, 2)), A)
    both(lambda x: ops.repeat(x, 2, axis=1), np.repeat(A, 2, axis=1), A)
    both(lambda x: ops.take(x, [2, 0], axis=1), np.take(A, [2, 0], axis=1), A)
    both(lambda x: ops.take(x, np.array([[1], [0]]), axis=1),
         np.take(A, np.array([[1], [0]]), axis=1), A)
    gelu = 0.5 * A * (1 + np.tanh(np.sqrt(2 / np.pi) * (A + 0.044715 * A ** 3)))
    both(ops.nn.gelu, gelu, A)
    with pytest.raises(ValueError, match="gelu\\(approximate=False\\) needs erf"):
        ops.gelu(placeholder((None, 3)), approximate=False)
    np.testing.assert_allclose(ops.gelu(np.array([1.0]), approximate=False), [0.8413447],
                               rtol=1e-6)


def test_keras_style_layer_uses_variables_directly_and_trains():
    """As in Keras's guides: ``self.w`` (not ``self.w.read``) in ``call`` and in ``add_loss``;
    the weights are graph values, so they train and their penalty has a gradient."""
    class Linear(hiapi.layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight((input_shape[-1], 2), "ones", "w")
            self.b = self.add_weight((2,), "zeros", "b")

        def call(self, inputs):
            self.add_loss(0.01 * ops.sum(ops.square(self.w)))
            return ops.matmul(inputs, self.w) + self.b

    x = RNG.normal(size=(16, 3)).astype(np.float32)
    inputs = hiapi.Input((3,))
    layer = Linear()
    model = hiapi.Model(inputs, layer(inputs))
    np.testing.assert_allclose(model.predict(x, verbose=0), x @ np.ones((3, 2)), rtol=1e-5)
    model.compile(optimizer=hiapi.optimizers.SGD(0.1), loss="mse")
    loss = model.evaluate(x, np.zeros((16, 2)), verbose=0)
    assert loss == pytest.approx(((x @ np.ones((3, 2))) ** 2).mean() + 0.06, rel=1e-5)
    model.fit(x, np.zeros((16, 2)), epochs=5, verbose=0)
    assert np.abs(layer.w.numpy()).max() < 1.0       # both the data term and the penalty
    assert ops.sum(layer.w).shape == ()                # outside call: a number, eagerly
    np.testing.assert_array_equal(layer.w * 2.0, layer.w.numpy() * 2.0)   # so do operators


def test_logsumexp_logs_broadcast_outer_average_triangles_creation():
    both(lambda x: ops.logsumexp(x, axis=-1), np.log(np.exp(A).sum(-1)), A)
    both(lambda x: ops.logsumexp(x, axis=1, keepdims=True),
         np.log(np.exp(A).sum(1, keepdims=True)), A)
    both(ops.log2, np.log2(P), P)
    both(ops.log10, np.log10(P), P)
    both(lambda x: ops.broadcast_to(x[:1], (3, 4)), np.broadcast_to(A[:1], (3, 4)), A)
    both(lambda x: ops.outer(x[0], x[1]), np.outer(A[0], A[1]), A)
    w = np.array([1.0, 2.0, 0.5, 0.5], np.float32)
    both(lambda x: ops.average(x, axis=1, weights=w), np.average(A, axis=1, weights=w), A)
    both(lambda x: ops.average(x, axis=1), A.mean(1), A)
    x3 = RNG.normal(size=(2, 3, 3)).astype(np.float32)
    both(ops.tril, np.tril(x3), x3)
    both(lambda x: ops.triu(x, 1), np.triu(x3, 1), x3)
    np.testing.assert_array_equal(ops.eye(2, 3, 1), np.eye(2, 3, 1))
    assert ops.identity(3).dtype == np.float32 and ops.linspace(0, 1, 5).dtype == np.float32
    with pytest.raises(ValueError, match="tril: the last two axes need known sizes"):
        ops.tril(placeholder((3, None)))


def test_more_activations():
    x = A.astype(np.float64) * 3
    both(ops.hard_sigmoid, np.clip(x + 3, 0, 6) / 6, x)
    both(ops.nn.hard_silu, x * np.clip(x + 3, 0, 6) / 6, x)
    both(ops.log_sigmoid, -np.log1p(np.exp(-x)), x)
    both(ops.softsign, x / (1 + np.abs(x)), x)
    both(ops.selu, 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * np.expm1(x)),
         x)


def reference_conv2d(x, w, stride=1):
    """Plain loops: NHWC input, (kh, kw, in, out) kernel, valid padding."""
    n, h, wd, _ = x.shape
    kh, kw, _, out = w.shape
    oh, ow = (h - kh) // stride + 1, (wd - kw) // stride + 1
    y = np.zeros((n, oh, ow, out))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * stride:i * stride + kh, j * stride:j * stride + kw, :]
            y[:, i, j] = np.tensordot(patch, w, axes=([1, 2, 3], [0, 1, 2]))
    return y


def test_conv_and_pooling_ops():
    x = RNG.normal(size=(2, 6, 5, 3)).astype(np.float32)
    w = RNG.normal(size=(3, 2, 3, 4)).astype(np.float32)
    both(lambda v: ops.conv(v, w), reference_conv2d(x, w), x, rtol=1e-4)
    both(lambda v: ops.conv(v, w, strides=2), reference_conv2d(x, w, 2), x, rtol=1e-4)
    nchw = x.transpose(0, 3, 1, 2)
    both(lambda v: ops.conv(v, w, data_format="channels_first"),
         reference_conv2d(x, w).transpose(0, 3, 1, 2), nchw, rtol=1e-4)
    seq, w1 = x[:, 0], w[0]                       # 1-D: (batch, steps, channels), (k, in, out)
    both(lambda v: ops.conv(v, w1), reference_conv2d(seq[:, None], w1[None])[:, 0], seq,
         rtol=1e-4)
    both(lambda v: ops.max_pool(v, 2), x[:, :6, :4].reshape(2, 3, 2, 2, 2, 3).max((2, 4)), x)
    both(lambda v: ops.nn.average_pool(v, (2, 1)), x.reshape(2, 3, 2, 5, 3).mean(2), x)
    both(lambda v: ops.max_pool(v, 2), seq[:, :4].reshape(2, 2, 2, 3).max(2), seq)
    with pytest.raises(ValueError, match="conv: the inputs' 3 channels are not a multiple"):
        ops.conv(placeholder((None, 4, 4, 3)), np.ones((1, 1, 2, 2), np.float32))
    with pytest.raises(ValueError, match="max_pool: inputs must have rank 3"):
        ops.max_pool(placeholder((None, 4)), 2)


def test_spatial_ops_follow_a_changed_image_data_format():
    """The eager graph cache must key on the resolved data format, not on data_format=None."""
    x = np.arange(64, dtype=np.float32).reshape(1, 4, 4, 4)
    assert ops.max_pool(x, 2).shape == (1, 2, 2, 4)
    hiapi.config.set_image_data_format("channels_first")
    try:
        assert ops.max_pool(x, 2).shape == (1, 4, 2, 2)
        assert ops.average_pool(x, 2).shape == (1, 4, 2, 2)
    finally:
        hiapi.config.set_image_data_format("channels_last")


EINSUM_CASES = [("bij,ijkl->bkl", (5, 3, 4), (3, 4, 2, 6)),
                ("bqhd,bkhd->bhqk", (2, 3, 4, 5), (2, 6, 4, 5)),
                ("ij,jk", (3, 4), (4, 5)), ("ij->ji", (3, 4)), ("i,i->", (4,), (4,)),
                ("i,j->ij", (3,), (4,)), ("...ij,...jk->...ik", (2, 3, 4), (2, 4, 5)),
                ("abc,cd->abd", (2, 3, 4), (4, 5)), ("ij,jk,kl->il", (2, 3), (3, 4), (4, 5)),
                ("bij->b", (2, 3, 4)), ("ab,cd->abcd", (2, 3), (4, 5)),
                ("abc,ab->c", (2, 3, 4), (2, 3))]


@pytest.mark.parametrize("spec, shapes", [(c[0], c[1:]) for c in EINSUM_CASES],
                         ids=[c[0] for c in EINSUM_CASES])
def test_einsum_matches_numpy(spec, shapes):
    arrays = [RNG.normal(size=s).astype(np.float32) for s in shapes]
    expected = np.einsum(spec, *arrays)
    np.testing.assert_allclose(ops.einsum(spec, *arrays), expected, rtol=1e-5, atol=1e-6)
    holders = [placeholder(((None,) + a.shape[1:]) if i == 0 else a.shape, a.dtype)
               for i, a in enumerate(arrays)]        # the first operand's batch unknown
    got = Function(holders, ops.einsum(spec, *holders))(*arrays)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("spec, shapes", [("bij,ijkl->bkl", ((2, 3, 2), (3, 2, 2, 2))),
                                          ("bqhd,bkhd->bhqk", ((2, 3, 2, 2), (2, 2, 2, 2))),
                                          ("ij,jk,kl->il", ((2, 3), (3, 2), (2, 2))),
                                          ("abc,ab->c", ((2, 3, 2), (2, 3)))])
def test_einsum_gradient_by_finite_differences(spec, shapes):
    arrays = [RNG.normal(size=s) for s in shapes]
    ops.check_gradient(lambda *xs: ops.einsum(spec, *xs), *arrays)


def test_einsum_errors_name_the_problem():
    x = placeholder((2, 2))
    with pytest.raises(ValueError, match="repeats a letter"):
        ops.einsum("ii->i", x)
    with pytest.raises(ValueError, match="names 2 operands, got 1"):
        ops.einsum("ij,jk->ik", x)
    with pytest.raises(ValueError, match="more than one unknown size"):
        ops.einsum("ab,cd->abcd", placeholder((None, 2)), placeholder((None, 3)))
