"""Sequential's inputs/outputs/pop and every layer's input/output/input_shape/output_shape:
the feature-extraction pattern of the Keras guides, against the model's own outputs."""
import numpy as np
import pytest

import hiapi
from hiapi import layers

X = np.random.default_rng(2).normal(size=(5, 6)).astype(np.float32)


def stack():
    return hiapi.Sequential([hiapi.Input((6,)), layers.Dense(4, activation="relu", name="a"),
                             layers.Dense(3, name="b"), layers.Dense(2, name="c")])


def test_feature_extraction_from_a_sequential_model():
    model = stack()
    extractor = hiapi.Model(inputs=model.inputs, outputs=[l.output for l in model.layers])
    features = extractor(X)
    a, b, c = model.get_layer("a"), model.get_layer("b"), model.get_layer("c")
    wa, ba = a.get_weights()
    np.testing.assert_allclose(features[0], np.maximum(X @ wa + ba, 0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(features[2], model.predict(X, verbose=0), rtol=1e-6)
    one = hiapi.Model(model.inputs, model.get_layer("b").output)
    np.testing.assert_allclose(one(X), features[1], rtol=1e-6)


def test_layer_shapes_and_model_input_output():
    model = stack()
    dense = model.layers[1]
    assert dense.input_shape == (None, 4) and dense.output_shape == (None, 3)
    assert model.input is model.inputs[0] and model.output is model.outputs[0]
    assert model.input.shape == (None, 6) and model.output.shape == (None, 2)
    a, b = hiapi.Input((2,)), hiapi.Input((3,))
    functional = hiapi.Model([a, b], layers.Concatenate()([a, b]))
    assert functional.input == [a, b]
    assert functional.layers[-1].input_shape == [(None, 2), (None, 3)]


def test_eager_and_training_calls_do_not_move_a_layers_output():
    model = stack()
    output = model.layers[0].output
    model.layers[0](X)
    model.compile("sgd", "mse")
    model.fit(X, np.zeros((5, 2)), verbose=0)
    assert model.layers[0].output is output


def test_unbuilt_layers_and_models_say_so():
    with pytest.raises(AttributeError, match="Layer 'never' has never been called"):
        layers.Dense(2, name="never").output
    lazy = hiapi.Sequential([layers.Dense(2)], name="lazy")
    with pytest.raises(AttributeError, match="Sequential model 'lazy' has no defined inputs"):
        lazy.inputs
    lazy.compile("sgd", "mse")
    lazy.fit(X, np.zeros((5, 2)), verbose=0)        # built from the data
    assert lazy.inputs[0].shape == (None, 6) and lazy.outputs[0].shape == (None, 2)


def test_pop_removes_the_last_layer_and_rebuilds():
    model = stack()
    popped = model.pop()
    assert popped.name == "c" and [l.name for l in model.layers] == ["a", "b"]
    assert model.outputs[0].shape == (None, 3)
    assert model.predict(X, verbose=0).shape == (5, 3)
    assert len(model.weights) == 4
    model.pop()
    model.pop()
    with pytest.raises(ValueError, match="has no layers to pop"):
        model.pop()


def test_compute_output_shape_is_not_a_node():
    dense = layers.Dense(3)
    assert dense.compute_output_shape((None, 4)) == (None, 3)
    inputs = hiapi.Input((4,))
    outputs = dense(inputs)
    assert dense.output is outputs and dense.input is inputs
