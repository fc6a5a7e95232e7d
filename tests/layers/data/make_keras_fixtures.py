"""Writes keras_fixtures.npz: inputs, weights and outputs of real Keras 3 layers, which
tests/layers/test_keras_fixtures.py loads into hiapi's layers and compares.

Run by hand where Keras is installed (not a test dependency):
    KERAS_BACKEND=jax python tests/layers/data/make_keras_fixtures.py
"""
import pathlib

import numpy as np

import keras

rng = np.random.default_rng(0)
out = {"keras_version": np.array(keras.__version__)}


def layer_case(name, layer, x):
    y = layer(x)
    out[f"{name}/x"] = x
    out[f"{name}/y"] = np.asarray(y)
    for i, w in enumerate(layer.get_weights()):
        out[f"{name}/w{i}"] = w
    out[f"{name}/params"] = np.array(layer.count_params())


def randomize(layer):
    layer.set_weights([rng.normal(size=w.shape).astype("float32") for w in layer.get_weights()])
    return layer


x = rng.normal(size=(2, 5, 4, 3)).astype("float32")
for i, (kernel, strides, padding, output_padding) in enumerate([
        (3, 2, "same", None), (4, 2, "same", 1), (3, 1, "valid", None), (2, 3, "valid", None),
        (3, 2, "valid", 1), ((3, 2), (2, 1), "same", None), (4, 2, "same", None)]):
    layer = keras.layers.Conv2DTranspose(4, kernel, strides, padding,
                                         output_padding=output_padding)
    layer.build(x.shape)
    layer_case(f"conv2d_transpose_{i}", randomize(layer), x)
    out[f"conv2d_transpose_{i}/config"] = np.array(repr(
        (kernel, strides, padding, output_padding)))

for i, kwargs in enumerate([dict(kernel_size=3, depth_multiplier=2, strides=2, padding="same"),
                            dict(kernel_size=(2, 3), dilation_rate=2, padding="same")]):
    layer = keras.layers.DepthwiseConv2D(**kwargs)
    layer.build(x.shape)
    layer_case(f"depthwise_{i}", randomize(layer), x)
layer = keras.layers.SeparableConv2D(4, 3, depth_multiplier=2, padding="same")
layer.build(x.shape)
layer_case("separable", randomize(layer), x)

seq = rng.normal(size=(2, 9, 3)).astype("float32")
layer = keras.layers.Conv1D(4, 3, padding="causal", dilation_rate=2)
layer.build(seq.shape)
layer_case("conv1d_causal", randomize(layer), seq)

for name, layer in [
        ("conv1d_transpose_0", keras.layers.Conv1DTranspose(4, 3, 2, "same")),
        ("conv1d_transpose_1", keras.layers.Conv1DTranspose(4, 4, 2, "same", output_padding=1)),
        ("depthwise1d", keras.layers.DepthwiseConv1D(3, 2, "same", depth_multiplier=2)),
        ("separable1d", keras.layers.SeparableConv1D(4, 3, padding="same",
                                                     depth_multiplier=2))]:
    layer.build(seq.shape)
    layer_case(name, randomize(layer), seq)

features = rng.normal(size=(2, 3, 4, 6)).astype("float32") * 2 + 1
layer = keras.layers.GroupNormalization(groups=3)
layer.build(features.shape)
layer_case("group_norm", randomize(layer), features)

data = (rng.normal(size=(50, 4)) * [1, 2, 3, 4] + [0, 1, 2, 3]).astype("float32")
norm = keras.layers.Normalization()
norm.adapt(data)
layer_case("normalization", norm, data[:5])

images = rng.normal(size=(3, 7, 8, 2)).astype("float32")
transforms = np.array([[0.9, -0.4, 2.2, 0.4, 0.9, -1.7, 0, 0],
                       [1.3, 0.0, -1.05, 0.0, 0.7, 0.9, 0, 0],
                       [-1.0, 0.0, 7.0, 0.0, 1.0, 0.0, 0, 0]], "float32")
out["affine/x"], out["affine/t"] = images, transforms
for interpolation in ("nearest", "bilinear"):
    for fill_mode in ("reflect", "wrap", "constant", "nearest"):
        out[f"affine/{interpolation}/{fill_mode}"] = np.asarray(keras.ops.image.affine_transform(
            images, transforms, interpolation, fill_mode, fill_value=0.5))

# RandomCrop at inference: the largest centred window with the target's aspect ratio (Keras's
# docstring and Keras 3.0's code), resized by keras.ops.image.resize. Keras 3.15's own layer
# returns the input unchanged at inference, so the window is cut here and only the resize is
# Keras's.
for i, (shape, size) in enumerate([((2, 6, 8, 1), (8, 4)), ((2, 10, 8, 3), (12, 6)),
                                   ((2, 11, 9, 2), (4, 4))]):
    x = rng.normal(size=shape).astype("float32")
    (h, w), (th, tw) = shape[1:3], size
    ch, cw = max(min(h, int(w * th / tw)), 1), max(min(w, int(h * tw / th)), 1)
    top, left = int((h - ch) / 2), int((w - cw) / 2)
    out[f"random_crop_{i}/x"] = x
    out[f"random_crop_{i}/y"] = np.asarray(keras.ops.image.resize(
        x[:, top:top + ch, left:left + cw], size))

np.savez_compressed(pathlib.Path(__file__).with_name("keras_fixtures.npz"), **out)
print(sorted(out))
