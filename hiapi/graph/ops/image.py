"""Resampling images through per-image projective transforms (the op behind RandomFlip,
RandomCrop, RandomRotation and RandomZoom, and the resize of RandomCrop at inference).

``image_transform(images, transforms, output_hw)``: images are NHWC; ``transforms`` holds one
row ``[a0, a1, a2, b0, b1, b2, c0, c1]`` per image (TensorFlow's and Keras's convention). The
output pixel at row r, column c reads the input at

    column = (a0 c + a1 r + a2) / k,    row = (b0 c + b1 r + b2) / k,    k = c0 c + c1 r + 1

with ``interpolation`` "nearest" (ties round away from zero) or "bilinear", and points outside
the image resolved by ``fill_mode`` on the neighbour indices, as Keras's JAX backend does
(checked against ``keras.ops.image.affine_transform`` in tests/layers/test_keras_fixtures.py):
"reflect" (d c b a | a b c d | d c b a), "wrap" (a b c d | a b c d), "nearest"
(a a a a | a b c d | d d d d), "mirror" (d c b | a b c d | c b a) or "constant" (neighbours
outside read ``fill_value``).

For fixed transforms the output is linear in the images (plus the fill constant), so the
image gradient is the transposed resampling, ``image_transform_grad`` (a scatter-add of the
same weights), and its gradient is ``image_transform`` again with fill 0: any order works.
The transforms get no gradient: augmentation draws them at random.
"""
import numpy as np

from hiapi.graph.op import Op, as_var, require_float

INTERPOLATIONS = ("nearest", "bilinear")
FILL_MODES = ("reflect", "wrap", "constant", "nearest", "mirror")


class _Resample(Op):
    def __init__(self, interpolation, fill_mode):
        self.interpolation = interpolation
        self.fill_mode = fill_mode

    def _check(self, images, transforms):
        require_float(self.name, images)
        if images.ndim != 4:
            raise ValueError(f"{self.name}: expected NHWC images (rank 4), got shape "
                             f"{images.shape}")
        if transforms.ndim != 2 or transforms.shape[1] != 8 or transforms.dtype.kind != "f":
            raise ValueError(f"{self.name}: transforms must be floats of shape (batch, 8), got "
                             f"shape {transforms.shape} dtype {transforms.dtype.name}")
        n, m = images.shape[0], transforms.shape[0]
        if n is not None and m is not None and m not in (1, n):
            raise ValueError(f"{self.name}: {m} transforms for a batch of {n} images (give one "
                             f"per image, or one for all)")


class ImageTransform(_Resample):
    name = "image_transform"

    def __init__(self, output_hw, interpolation, fill_mode, fill_value):
        super().__init__(interpolation, fill_mode)
        self.output_hw = tuple(output_hw)
        self.fill_value = float(fill_value)

    def infer(self, images, transforms):
        self._check(images, transforms)
        return (images.shape[0],) + self.output_hw + (images.shape[3],), images.dtype

    def grad(self, inputs, y, g):
        images, transforms = inputs
        return [image_transform_grad(g, transforms, images.shape[1:3], self.interpolation,
                                     self.fill_mode), None]


class ImageTransformGrad(_Resample):
    """The transpose of ``image_transform`` in its images: each output-gradient pixel is
    added, with its interpolation weights, to the input pixels it was read from."""
    name = "image_transform_grad"

    def __init__(self, input_hw, interpolation, fill_mode):
        super().__init__(interpolation, fill_mode)
        self.input_hw = tuple(input_hw)

    def infer(self, g, transforms):
        self._check(g, transforms)
        return (g.shape[0],) + self.input_hw + (g.shape[3],), g.dtype

    def grad(self, inputs, y, u):
        g, transforms = inputs
        return [image_transform(u, transforms, g.shape[1:3], self.interpolation,
                                self.fill_mode, 0.0), None]


def _check_args(interpolation, fill_mode, hw, what):
    if interpolation not in INTERPOLATIONS:
        raise ValueError(f"image_transform: interpolation must be one of {INTERPOLATIONS}, "
                         f"got {interpolation!r}")
    if fill_mode not in FILL_MODES:
        raise ValueError(f"image_transform: fill_mode must be one of {FILL_MODES}, got "
                         f"{fill_mode!r}")
    hw = tuple(hw)
    if len(hw) != 2 or not all(isinstance(d, (int, np.integer)) and d > 0 for d in hw):
        raise ValueError(f"image_transform: {what} must be two known positive sizes, got {hw}")
    return tuple(int(d) for d in hw)


def image_transform(images, transforms, output_hw, interpolation="bilinear",
                    fill_mode="constant", fill_value=0.0):
    output_hw = _check_args(interpolation, fill_mode, output_hw, "output_hw")
    return ImageTransform(output_hw, interpolation, fill_mode, fill_value)(
        as_var(images), as_var(transforms))


def image_transform_grad(g, transforms, input_hw, interpolation="bilinear",
                         fill_mode="constant"):
    input_hw = _check_args(interpolation, fill_mode, input_hw, "input_hw")
    return ImageTransformGrad(input_hw, interpolation, fill_mode)(as_var(g), as_var(transforms))
