"""Real Keras 3 numbers (tests/layers/data/keras_fixtures.npz, written by
make_keras_fixtures.py with Keras's JAX backend): Keras's weights load into hiapi's layers
unchanged and give Keras's outputs; parameter counts match; ``image_transform`` matches
``keras.ops.image.affine_transform`` for every fill mode and interpolation; RandomCrop's
inference resize matches ``keras.ops.image.resize``."""
import ast
import pathlib

import numpy as np
import pytest

from hiapi import layers
from hiapi.graph import Function, ops, placeholder

FIXTURES = np.load(pathlib.Path(__file__).parent / "data" / "keras_fixtures.npz")


def weights(name):
    return [FIXTURES[f"{name}/w{i}"] for i in range(10) if f"{name}/w{i}" in FIXTURES]


def check(name, layer, rtol=1e-4, atol=1e-4):
    x = FIXTURES[f"{name}/x"]
    layer(x)
    layer.set_weights(weights(name))
    np.testing.assert_allclose(layer(x), FIXTURES[f"{name}/y"], rtol=rtol, atol=atol)
    if f"{name}/params" in FIXTURES:
        assert layer.count_params() == int(FIXTURES[f"{name}/params"])


@pytest.mark.parametrize("case", range(7))
def test_conv2d_transpose_matches_keras(case):
    kernel, strides, padding, output_padding = ast.literal_eval(
        str(FIXTURES[f"conv2d_transpose_{case}/config"]))
    check(f"conv2d_transpose_{case}", layers.Conv2DTranspose(
        4, kernel, strides, padding, output_padding=output_padding))


def test_depthwise_separable_causal_group_norm_match_keras():
    check("depthwise_0", layers.DepthwiseConv2D(3, depth_multiplier=2, strides=2,
                                                padding="same"))
    check("depthwise_1", layers.DepthwiseConv2D((2, 3), dilation_rate=2, padding="same"))
    check("separable", layers.SeparableConv2D(4, 3, depth_multiplier=2, padding="same"))
    check("conv1d_causal", layers.Conv1D(4, 3, padding="causal", dilation_rate=2))
    check("group_norm", layers.GroupNormalization(groups=3))


def test_one_dimensional_variants_match_keras():
    check("conv1d_transpose_0", layers.Conv1DTranspose(4, 3, 2, "same"))
    check("conv1d_transpose_1", layers.Conv1DTranspose(4, 4, 2, "same", output_padding=1))
    check("depthwise1d", layers.DepthwiseConv1D(3, 2, "same", depth_multiplier=2))
    check("separable1d", layers.SeparableConv1D(4, 3, padding="same", depth_multiplier=2))


def test_normalization_adapt_matches_keras():
    norm = layers.Normalization()
    data = FIXTURES["normalization/x"]
    norm(data)
    norm.set_weights(weights("normalization"))       # Keras's mean, variance, count
    np.testing.assert_allclose(norm(data), FIXTURES["normalization/y"], rtol=1e-5, atol=1e-5)
    assert norm.count_params() == int(FIXTURES["normalization/params"])


@pytest.mark.parametrize("interpolation", ["nearest", "bilinear"])
@pytest.mark.parametrize("fill_mode", ["reflect", "wrap", "constant", "nearest"])
def test_image_transform_matches_keras_affine_transform(interpolation, fill_mode):
    x, t = FIXTURES["affine/x"], FIXTURES["affine/t"]
    images = placeholder((None,) + x.shape[1:])
    f = Function([images], ops.image_transform(images, t, x.shape[1:3], interpolation,
                                               fill_mode, 0.5))
    np.testing.assert_allclose(f(x), FIXTURES[f"affine/{interpolation}/{fill_mode}"],
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case, size", [(0, (8, 4)), (1, (12, 6)), (2, (4, 4))])
def test_random_crop_inference_resize_matches_keras(case, size):
    x = FIXTURES[f"random_crop_{case}/x"]
    np.testing.assert_allclose(layers.RandomCrop(*size)(x),
                               FIXTURES[f"random_crop_{case}/y"], rtol=1e-5, atol=1e-5)
