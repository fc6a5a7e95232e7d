"""image_transform / image_transform_grad, sin, cos and random_normal through ``check_op``:
forward against per-pixel loops written here from Keras's map_coordinates rules, float64
finite-difference gradients and second derivatives."""
import math

import numpy as np
import pytest

from check_op import check_op
from hiapi.graph import Function, ops, placeholder

RNG = np.random.default_rng(7)


def fix_index(i, size, mode):
    if mode == "nearest":
        return min(max(i, 0), size - 1)
    if mode == "wrap":
        return i % size
    if mode == "reflect":               # d c b a | a b c d | d c b a
        period = 2 * size
        i %= period
        return i if i < size else period - 1 - i
    if mode == "mirror":                # d c b | a b c d | c b a
        if size == 1:
            return 0
        period = 2 * size - 2
        i %= period
        return i if i < size else period - i
    return i


def half_away(v):
    return int(math.copysign(math.floor(abs(v) + 0.5), v))


def reference(images, transforms, out_hw, interpolation, fill_mode, fill_value):
    n, h, w, c = images.shape
    out = np.zeros((n,) + tuple(out_hw) + (c,))
    for b in range(n):
        a0, a1, a2, b0, b1, b2, c0, c1 = transforms[b]
        for r in range(out_hw[0]):
            for col in range(out_hw[1]):
                k = c0 * col + c1 * r + 1
                x, y = (a0 * col + a1 * r + a2) / k, (b0 * col + b1 * r + b2) / k
                if interpolation == "nearest":
                    taps = [(half_away(y), half_away(x), 1.0)]
                else:
                    fy, fx = math.floor(y), math.floor(x)
                    dy, dx = y - fy, x - fx
                    taps = [(fy, fx, (1 - dy) * (1 - dx)), (fy, fx + 1, (1 - dy) * dx),
                            (fy + 1, fx, dy * (1 - dx)), (fy + 1, fx + 1, dy * dx)]
                for iy, ix, weight in taps:
                    iy, ix = fix_index(iy, h, fill_mode), fix_index(ix, w, fill_mode)
                    inside = 0 <= iy < h and 0 <= ix < w
                    out[b, r, col] += weight * (images[b, iy, ix] if inside else fill_value)
    return out


def rotation(angle, h, w):
    cos, sin = math.cos(angle), math.sin(angle)
    return [cos, -sin, ((w - 1) - (cos * (w - 1) - sin * (h - 1))) / 2,
            sin, cos, ((h - 1) - (sin * (w - 1) + cos * (h - 1))) / 2, 0, 0]


TRANSFORMS = np.array([rotation(0.4, 5, 6), [1.3, 0.1, -0.7, -0.2, 0.8, 0.9, 0.01, -0.02]])
CASES = [("bilinear", mode, 0.0) for mode in ("reflect", "wrap", "nearest", "mirror")] + [
    ("bilinear", "constant", 0.5), ("nearest", "reflect", 0.0), ("nearest", "constant", -1.0)]


@pytest.mark.parametrize("interpolation, fill_mode, fill_value", CASES)
def test_image_transform(interpolation, fill_mode, fill_value):
    x = RNG.normal(size=(2, 5, 6, 3))
    t = TRANSFORMS + RNG.uniform(-0.01, 0.01, TRANSFORMS.shape) * [1, 1, 0, 1, 1, 0, 0, 0]
    args = dict(output_hw=(4, 7), interpolation=interpolation, fill_mode=fill_mode)
    check_op(lambda a, b: ops.image_transform(a, b, fill_value=fill_value, **args), [x, t],
             lambda a, b: reference(a, b, (4, 7), interpolation, fill_mode, fill_value),
             grad_inputs=[0], batch=True, double=True)


def test_image_transform_grad_is_the_adjoint():
    x, t = RNG.normal(size=(2, 5, 6, 3)), TRANSFORMS
    g = RNG.normal(size=(2, 4, 7, 3))
    for interpolation, fill_mode, _ in CASES:
        dx = check_op(lambda a, b: ops.image_transform_grad(a, b, (5, 6), interpolation,
                                                            fill_mode), [g, t],
                      grad_inputs=[0], double=True)
        forward = reference(x, t, (4, 7), interpolation, fill_mode, 0.0)
        assert (x * dx).sum() == pytest.approx((forward * g).sum(), rel=1e-10)


def test_integer_translation_and_flip_are_exact():
    x = RNG.normal(size=(2, 4, 5, 1)).astype(np.float32)
    flip_and_shift = np.array([[-1, 0, 4, 0, 1, 0, 0, 0], [1, 0, 1, 0, 1, 2, 0, 0]], np.float32)
    holder = placeholder((None, 4, 5, 1))
    y = Function([holder], ops.image_transform(holder, flip_and_shift, (2, 3)))(x)
    np.testing.assert_array_equal(y[0], x[0, :2, ::-1][:, :3])
    np.testing.assert_array_equal(y[1], x[1, 2:4, 1:4])


def test_image_transform_rejects_bad_arguments():
    images = placeholder((None, 4, 4, 1))
    with pytest.raises(ValueError, match="fill_mode must be one of"):
        ops.image_transform(images, np.zeros((1, 8), np.float32), (4, 4), fill_mode="edge")
    with pytest.raises(ValueError, match="interpolation must be one of"):
        ops.image_transform(images, np.zeros((1, 8), np.float32), (4, 4), "bicubic")
    with pytest.raises(ValueError, match=r"transforms must be floats of shape \(batch, 8\)"):
        ops.image_transform(images, np.zeros((1, 6), np.float32), (4, 4))
    with pytest.raises(ValueError, match="3 transforms for a batch of 2 images"):
        ops.image_transform(placeholder((2, 4, 4, 1)), np.zeros((3, 8), np.float32), (4, 4))
    with pytest.raises(ValueError, match=r"expected NHWC images \(rank 4\)"):
        ops.image_transform(placeholder((None, 4, 4)), np.zeros((1, 8), np.float32), (4, 4))


@pytest.mark.parametrize("op, reference", [(ops.sin, np.sin), (ops.cos, np.cos)])
def test_sin_cos(op, reference):
    check_op(op, [np.linspace(-4, 4, 12).reshape(3, 4)], reference, batch=True, double=True)


def test_random_normal_moments_and_reproducibility():
    like, counter = placeholder((None, 1000)), placeholder((), "int64")
    f = Function([like, counter], ops.random_normal(like, 5, counter))
    a = f(np.zeros((100, 1000), np.float32), np.int64(0))
    assert a.dtype == np.float32 and np.isfinite(a).all()
    assert abs(a.mean()) < 0.01 and abs(a.std() - 1) < 0.01
    assert abs(((a - a.mean()) ** 3).mean()) < 0.03           # symmetric
    np.testing.assert_array_equal(a, f(np.zeros((100, 1000), np.float32), np.int64(0)))
    assert not np.array_equal(a, f(np.zeros((100, 1000), np.float32), np.int64(1)))


def test_one_transform_row_applies_to_the_whole_batch():
    x = RNG.normal(size=(3, 5, 6, 2)).astype(np.float32)
    holder = placeholder((None, 5, 6, 2))
    one = Function([holder], ops.image_transform(holder, TRANSFORMS[:1].astype(np.float32),
                                                 (5, 6)))(x)
    each = Function([holder], ops.image_transform(
        holder, np.repeat(TRANSFORMS[:1], 3, 0).astype(np.float32), (5, 6)))(x)
    np.testing.assert_array_equal(one, each)
