"""Conv2DTranspose, DepthwiseConv2D, SeparableConv2D and Conv1D(padding="causal") against
plain numpy loops, with Keras's weight layouts and parameter counts, config round trips and a
training step (``check_layer``)."""
import numpy as np
import pytest

from layer_check import check_layer
from numpy_references import conv2d as conv_reference

import hiapi
from hiapi import layers

RNG = np.random.default_rng(3)


def randn(*shape):
    return RNG.normal(size=shape).astype(np.float32)


def keras_left_pad(kernel, stride, padding, output_padding):
    """Keras's JAX backend (_convert_conv_transpose_padding_args_from_keras_to_jax): the
    padding before the stride-dilated input, written out independently of hiapi's geometry."""
    if padding == "valid":
        return kernel - 1
    pad_len = stride + kernel - 2 if output_padding is None \
        else kernel + kernel % 2 - 2 + output_padding
    return min(pad_len // 2 + pad_len % 2, kernel - 1)


def keras_out_len(n, kernel, stride, padding, output_padding):
    if output_padding is None:
        return n * stride + max(kernel - stride, 0) if padding == "valid" else n * stride
    pad = kernel // 2 if padding == "same" else 0
    return (n - 1) * stride + kernel - 2 * pad + output_padding


def conv_transpose_reference(x, w, b, strides, padding, output_padding, dilation=(1, 1)):
    """out[i * s + t * d - P] += x[i] * w[t] per axis, w of shape (kh, kw, filters, in)."""
    n, h, wd, _ = x.shape
    kh, kw, filters, _ = w.shape
    ext = [(k - 1) * d + 1 for k, d in zip((kh, kw), dilation)]
    ops_ = output_padding or (None, None)
    out_hw = [keras_out_len(size, e, s, padding, p)
              for size, e, s, p in zip((h, wd), ext, strides, ops_)]
    shift = [e - 1 - keras_left_pad(e, s, padding, p) for e, s, p in zip(ext, strides, ops_)]
    out = np.zeros((n, *out_hw, filters))
    for i in range(h):
        for j in range(wd):
            for ti in range(kh):
                for tj in range(kw):
                    r = i * strides[0] + ti * dilation[0] - shift[0]
                    c = j * strides[1] + tj * dilation[1] - shift[1]
                    if 0 <= r < out_hw[0] and 0 <= c < out_hw[1]:
                        out[:, r, c] += x[:, i, j] @ w[ti, tj].T
    return out + b


@pytest.mark.parametrize("kernel, strides, padding, output_padding, dilation", [
    ((3, 3), (1, 1), "valid", None, (1, 1)),
    ((3, 3), (2, 2), "same", None, (1, 1)),
    ((4, 3), (2, 3), "same", None, (1, 1)),      # even kernel, unequal strides
    ((2, 2), (3, 3), "valid", None, (1, 1)),     # kernel smaller than stride: gaps
    ((3, 3), (2, 2), "same", (1, 1), (1, 1)),
    ((3, 4), (2, 2), "valid", (1, 0), (1, 1)),
    ((4, 4), (2, 2), "same", (1, 1), (1, 1)),
    ((3, 3), (1, 1), "same", None, (2, 2)),      # dilation
])
def test_conv2d_transpose(kernel, strides, padding, output_padding, dilation):
    x = randn(2, 4, 5, 3)
    check_layer(lambda: layers.Conv2DTranspose(
        6, kernel, strides=strides, padding=padding, output_padding=output_padding,
        dilation_rate=dilation, bias_initializer="random_normal"), x,
        lambda x, w, b: conv_transpose_reference(x, w, b, strides, padding, output_padding,
                                                 dilation),
        [("kernel", kernel + (6, 3)), ("bias", (6,))], rtol=1e-4, atol=1e-4,
        train=padding == "same")


def test_conv2d_transpose_channels_first_and_errors():
    x = randn(2, 3, 4, 4)
    layer = layers.Conv2DTranspose(5, 3, strides=2, padding="same",
                                   data_format="channels_first")
    y = layer(x)
    w, b = layer.get_weights()
    expected = conv_transpose_reference(x.transpose(0, 2, 3, 1), w, b, (2, 2), "same", None)
    np.testing.assert_allclose(y, expected.transpose(0, 3, 1, 2), rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="output_padding must be .* smaller than its stride"):
        layers.Conv2DTranspose(4, 3, strides=2, output_padding=2)
    with pytest.raises(ValueError, match="does not convolve back"):
        layers.Conv2DTranspose(4, 2, strides=2, padding="same", output_padding=0)(x)


def test_conv2d_transpose_inverts_conv_shapes_in_an_autoencoder():
    inputs = hiapi.Input((8, 8, 1))
    code = layers.Conv2D(4, 3, strides=2, padding="same")(inputs)
    out = layers.Conv2DTranspose(1, 3, strides=2, padding="same")(code)
    model = hiapi.Model(inputs, out)
    assert out.shape == (None, 8, 8, 1)
    assert model.layers[-1].count_params() == 3 * 3 * 1 * 4 + 1    # Keras: 37


def depthwise_reference(x, w, b, strides, padding, dilation):
    channels, multiplier = w.shape[2:]
    grouped = w.reshape(w.shape[:2] + (1, channels * multiplier))
    return conv_reference(x, grouped, strides, padding, dilation, channels) + b


def depthwise_loops(x, w, b):
    """Valid, stride 1, the definition: out[..., c * M + m] = sum x[..., c] * w[..., c, m]."""
    kh, kw, channels, multiplier = w.shape
    n, h, wd, _ = x.shape
    out = np.zeros((n, h - kh + 1, wd - kw + 1, channels * multiplier))
    for c in range(channels):
        for m in range(multiplier):
            for i in range(kh):
                for j in range(kw):
                    out[..., c * multiplier + m] += \
                        x[:, i:i + h - kh + 1, j:j + wd - kw + 1, c] * w[i, j, c, m]
    return out + b


def test_depthwise_conv2d_definition():
    x = randn(2, 6, 5, 3)
    check_layer(lambda: layers.DepthwiseConv2D(3, depth_multiplier=2,
                                               bias_initializer="random_normal"),
                x, depthwise_loops, [("kernel", (3, 3, 3, 2)), ("bias", (6,))],
                rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("strides, padding, dilation", [((2, 2), "same", (1, 1)),
                                                       ((1, 1), "same", (2, 2))])
def test_depthwise_conv2d_strides_dilation(strides, padding, dilation):
    x = randn(2, 7, 6, 4)
    layer = layers.DepthwiseConv2D((3, 2), strides, padding, depth_multiplier=3,
                                   dilation_rate=dilation, bias_initializer="random_normal")
    y = layer(x)
    np.testing.assert_allclose(y, depthwise_reference(x, *layer.get_weights(), strides,
                                                      padding, dilation), rtol=1e-4, atol=1e-4)
    assert layer.count_params() == 3 * 2 * 4 * 3 + 12


def test_separable_conv2d():
    x = randn(2, 6, 6, 3)

    def reference(x, depthwise, pointwise, b):
        inner = depthwise_loops(x, depthwise, np.zeros(6))
        return inner @ pointwise[0, 0] + b
    check_layer(lambda: layers.SeparableConv2D(5, 3, depth_multiplier=2,
                                               bias_initializer="random_normal"), x, reference,
                [("depthwise_kernel", (3, 3, 3, 2)), ("pointwise_kernel", (1, 1, 6, 5)),
                 ("bias", (5,))], rtol=1e-4, atol=1e-4)
    assert layers.SeparableConv2D(16, 3).compute_output_shape((None, 8, 8, 8)) == \
        (None, 6, 6, 16)


def test_keras_parameter_counts():
    model = hiapi.Sequential([
        hiapi.Input((8, 8, 8)), layers.Conv2DTranspose(16, 3), layers.DepthwiseConv2D(3, 1,
        depth_multiplier=2), layers.SeparableConv2D(16, 3)])
    # Keras 3 summary: 1,168 / 320 / 816
    assert [layer.count_params() for layer in model.layers] == [
        3 * 3 * 16 * 8 + 16, 3 * 3 * 16 * 2 + 32, 3 * 3 * 32 + 32 * 16 + 16]


@pytest.mark.parametrize("kernel, dilation, strides", [(3, 1, 1), (2, 3, 1), (3, 1, 2)])
def test_conv1d_causal(kernel, dilation, strides):
    x = randn(2, 9, 3)

    def reference(x, w, b):
        padded = np.pad(x, [(0, 0), ((kernel - 1) * dilation, 0), (0, 0)])
        return conv_reference(padded[:, None], w[None], (1, strides), "valid",
                              (1, dilation), 1)[:, 0] + b
    layer, y = check_layer(lambda: layers.Conv1D(4, kernel, strides=strides, padding="causal",
                                                 dilation_rate=dilation,
                                                 bias_initializer="random_normal"),
                           x, reference, [("kernel", (kernel, 3, 4)), ("bias", (4,))],
                           rtol=1e-4, atol=1e-4)
    assert layer.get_config()["padding"] == "causal"
    # causality: changing the last step changes only the last output
    later = x.copy()
    later[:, -1] += 1
    if strides == 1:
        np.testing.assert_array_equal(layer(later)[:, :-1], y[:, :-1])


def test_one_dimensional_variants_are_the_2d_layers_on_one_row():
    x = randn(2, 9, 3)
    image = x[:, None]
    cases = [
        (lambda: layers.Conv1DTranspose(4, 3, strides=2, padding="same",
                                        bias_initializer="random_normal"),
         lambda: layers.Conv2DTranspose(4, (1, 3), (1, 2), "same"),
         [("kernel", (3, 4, 3)), ("bias", (4,))]),
        (lambda: layers.DepthwiseConv1D(3, depth_multiplier=2, bias_initializer="random_normal"),
         lambda: layers.DepthwiseConv2D((1, 3), depth_multiplier=2),
         [("kernel", (3, 3, 2)), ("bias", (6,))]),
        (lambda: layers.SeparableConv1D(5, 3, padding="same", bias_initializer="random_normal"),
         lambda: layers.SeparableConv2D(5, (1, 3), padding="same"),
         [("depthwise_kernel", (3, 3, 1)), ("pointwise_kernel", (1, 3, 5)), ("bias", (5,))]),
    ]
    for make_1d, make_2d, weights in cases:
        def reference(x, *w):
            twin = make_2d()
            twin(image)
            twin.set_weights([v[None] if v.ndim > 1 else v for v in w])
            return twin(image)[:, 0]
        check_layer(make_1d, x, reference, weights, rtol=1e-5, atol=1e-5)
