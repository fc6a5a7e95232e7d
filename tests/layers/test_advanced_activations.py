"""ReLU, LeakyReLU, ELU, PReLU and Softmax: forward maths against numpy written out here,
against real Keras 3 (data/keras_activations.npz, from make_keras_activations.py), gradients
against finite differences (inputs, and PReLU's alpha), config round trips, a training step,
and the errors for bad arguments."""
import json
import pathlib
import warnings

import numpy as np
import pytest

from check_op import check_op
from layer_check import check_layer

import hiapi
from hiapi import layers
from hiapi.graph import Function, grad, placeholder

KERAS = np.load(pathlib.Path(__file__).parent / "data" / "keras_activations.npz")
RNG = np.random.default_rng(3)
# away from every kink (0, the threshold 0.5, max_value 1) so finite differences are smooth
X = np.array([[-2.1, -0.7, -0.2, 0.3, 0.8, 1.6], [1.3, -1.2, 0.6, -0.4, 2.2, 0.2]])


def reference_relu(x, max_value=None, negative_slope=0.0, threshold=0.0):
    y = np.where(x > threshold, x, 0.0)
    if max_value is not None:
        y = np.minimum(y, max_value)
    return y - negative_slope * np.maximum(threshold - x, 0.0)


def reference_softmax(x, axis=-1, mask=None):
    if mask is not None:
        x = np.where(mask, x, -1e9)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    y = e / e.sum(axis=axis, keepdims=True)
    return y if mask is None else np.where(mask, y, 0.0)


@pytest.mark.parametrize("kwargs", [{}, {"max_value": 1.0},
                                    {"max_value": 1.0, "negative_slope": 0.1, "threshold": 0.5},
                                    {"negative_slope": 0.2}])
def test_relu(kwargs):
    x = X.astype("float32")
    check_layer(lambda: layers.ReLU(**kwargs), x, lambda x: reference_relu(x, **kwargs))
    layer = layers.ReLU(**kwargs)
    check_op(lambda v: layer(v), [X], lambda x: reference_relu(x, **kwargs), batch=True)


@pytest.mark.parametrize("slope", [0.3, 0.05])
def test_leaky_relu(slope):
    reference = lambda x: np.where(x >= 0, x, slope * x)
    check_layer(lambda: layers.LeakyReLU(negative_slope=slope), X.astype("float32"), reference)
    check_op(lambda v: layers.LeakyReLU(slope)(v), [X], reference, batch=True)
    assert layers.LeakyReLU().negative_slope == 0.3


def test_leaky_relu_alpha_is_keras_2s_deprecated_name():
    with pytest.warns(UserWarning, match="`alpha` is deprecated. Use `negative_slope`"):
        layer = layers.LeakyReLU(alpha=0.1)
    assert layer.get_config()["negative_slope"] == 0.1 and "alpha" not in layer.get_config()


@pytest.mark.parametrize("alpha", [1.0, 0.4])
def test_elu(alpha):
    reference = lambda x: np.where(x > 0, x, alpha * np.expm1(x))
    check_layer(lambda: layers.ELU(alpha), X.astype("float32"), reference, rtol=1e-5)
    check_op(lambda v: layers.ELU(alpha)(v), [X], reference, batch=True)


@pytest.mark.parametrize("shared_axes, alpha_shape", [(None, (3, 4)), ([1], (1, 4)),
                                                      (2, (3, 1)), ([1, 2], (1, 1))])
def test_prelu_weights_and_forward(shared_axes, alpha_shape):
    x = RNG.normal(size=(2, 3, 4)).astype("float32")

    def make():
        return layers.PReLU(alpha_initializer="random_normal", shared_axes=shared_axes)
    reference = lambda x, alpha: np.where(x >= 0, x, alpha * x)
    check_layer(make, x, reference, weights=[("alpha", alpha_shape)])


def test_prelu_defaults_and_errors():
    layer = layers.PReLU()
    y = layer(np.array([[-2.0, 3.0]], "float32"))
    np.testing.assert_array_equal(y, [[0.0, 3.0]])           # alpha starts at zeros
    assert layer.get_config()["shared_axes"] is None
    with pytest.raises(ValueError, match=r"PReLU 'p': shared_axes holds 3.*\(1, 2, 2\)"):
        layers.PReLU(shared_axes=3, name="p")(np.ones((1, 2, 2), "float32"))
    layer = layers.PReLU(shared_axes=[1])
    layer(np.ones((1, 2, 3), "float32"))
    with pytest.raises(ValueError):                          # axis 2 is not shared: fixed
        layer(np.ones((1, 2, 4), "float32"))


def test_prelu_gradients_match_finite_differences():
    layer = layers.PReLU(alpha_initializer="random_normal", dtype="float64")
    check_op(lambda v: layer(v), [X], batch=True)            # inputs
    x = placeholder((None, 6), "float64")
    cotangent = RNG.normal(size=X.shape)
    loss = (layer(x) * cotangent).sum()
    (d_alpha,) = grad(loss, [layer.alpha.read])
    analytic = Function([x], d_alpha)(X)
    alpha = layer.alpha.numpy()
    numeric = np.zeros_like(alpha)
    for i in range(alpha.size):
        step = np.zeros_like(alpha)
        step.flat[i] = 1e-6
        values = []
        for sign in (1, -1):
            layer.alpha.assign(alpha + sign * step)
            values.append(np.sum(layer(X) * cotangent))
        numeric.flat[i] = (values[0] - values[1]) / 2e-6
    layer.alpha.assign(alpha)
    np.testing.assert_allclose(analytic, numeric, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("axis", [-1, 1, [1, 2]])
def test_softmax(axis):
    x = RNG.normal(size=(2, 3, 4))
    numpy_axis = tuple(axis) if isinstance(axis, list) else axis
    reference = lambda x: reference_softmax(x, numpy_axis)
    check_layer(lambda: layers.Softmax(axis=axis), x.astype("float32"), reference)
    check_op(lambda v: layers.Softmax(axis=axis)(v), [x], reference, batch=True)


def test_softmax_mask_gives_masked_positions_nothing():
    x = RNG.normal(size=(2, 3, 4))
    mask = RNG.random((2, 3, 4)) > 0.4
    layer = layers.Softmax()
    y = layer(x.astype("float32"), mask=mask)
    np.testing.assert_allclose(y, reference_softmax(x, -1, mask), rtol=1e-5, atol=1e-7)
    np.testing.assert_array_equal(y[~mask], 0.0)
    float_mask = mask.astype("float32") * 0.9                 # > 0.5 keeps
    np.testing.assert_allclose(layer(x.astype("float32"), mask=float_mask), y)
    broadcast = mask[:, :1, :]                                # (2, 1, 4) broadcasts
    np.testing.assert_allclose(layer(x.astype("float32"), mask=broadcast),
                               reference_softmax(x, -1, np.broadcast_to(broadcast, x.shape)),
                               rtol=1e-5, atol=1e-7)
    check_op(lambda v, m: layers.Softmax()(v, mask=m), [x, mask],
             lambda v, m: reference_softmax(v, -1, m), batch=True)
    with pytest.raises(ValueError, match=r"Softmax 's': the mask must broadcast.*mask.shape="
                                         r"\(2, 3, 2\)"):
        layers.Softmax(name="s")(x.astype("float32"), mask=np.ones((2, 3, 2), bool))


@pytest.mark.parametrize("make, argument", [
    (lambda: layers.ReLU(max_value=-1.0), "max_value"),
    (lambda: layers.ReLU(negative_slope=-0.1), "negative_slope"),
    (lambda: layers.ReLU(threshold=None), "threshold"),
    (lambda: layers.LeakyReLU(negative_slope=-0.3), "negative_slope")])
def test_bad_arguments_are_named(make, argument):
    with pytest.raises(ValueError, match=rf"{argument} must be a float >= 0"):
        make()


@pytest.mark.parametrize("name, make", [
    ("relu", layers.ReLU),
    ("relu_clipped", lambda: layers.ReLU(max_value=1.0, negative_slope=0.1, threshold=0.5)),
    ("leaky_relu", layers.LeakyReLU), ("leaky_relu_0.1", lambda: layers.LeakyReLU(0.1)),
    ("elu", layers.ELU), ("elu_0.5", lambda: layers.ELU(alpha=0.5)),
    ("prelu", layers.PReLU), ("prelu_shared", lambda: layers.PReLU(shared_axes=[1])),
    ("softmax", layers.Softmax), ("softmax_axis1", lambda: layers.Softmax(axis=1)),
    ("softmax_masked", layers.Softmax)])
def test_matches_keras(name, make):
    layer = make()
    x = KERAS["x"]
    kwargs = {"mask": KERAS["mask"]} if name.endswith("masked") else {}
    layer(x, **kwargs)
    layer.set_weights([KERAS[f"{name}/w{i}"] for i in range(len(layer.weights))])
    np.testing.assert_allclose(layer(x, **kwargs), KERAS[f"{name}/y"], rtol=1e-5, atol=1e-6)


def test_configs_are_keras_arguments_and_round_trip_through_serialize():
    for layer in (layers.ReLU(max_value=2.0), layers.LeakyReLU(0.1), layers.ELU(0.3),
                  layers.PReLU(shared_axes=[1, 2]), layers.Softmax(axis=[1, 2])):
        entry = json.loads(json.dumps(hiapi.layers.serialize(layer)))
        assert entry["module"] == "keras.layers"
        again = hiapi.layers.deserialize(entry)
        assert type(again) is type(layer) and again.get_config() == layer.get_config()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        layers.LeakyReLU(negative_slope=0.2)
