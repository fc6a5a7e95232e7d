"""Ops and Python arithmetic on layer outputs (``a + b``, ``x += r``, ``-a``, ``ops.relu``)
become nodes of a functional model: it predicts, trains, nests, saves and loads like one built
from layers only; what cannot be saved is refused at save time, naming it."""
import numpy as np
import pytest

import hiapi
from hiapi import layers, ops
from hiapi.graph import Variable

RNG = np.random.default_rng(5)
X = RNG.normal(size=(16, 6)).astype(np.float32)
Y = RNG.integers(0, 3, 16)


def residual_model():
    hiapi.utils.set_random_seed(1)
    inputs = hiapi.Input((6,))
    x = layers.Dense(6, name="first")(inputs)
    residual = x
    x = layers.Dense(6, name="second")(x)
    x += residual
    x = -ops.relu(x) * 2.0 + ops.mean(x, axis=-1, keepdims=True)
    outputs = ops.softmax(layers.Dense(3, name="head")(x))
    return hiapi.Model(inputs, outputs)


def reference(model, x):
    w1, b1, w2, b2, w3, b3 = model.get_weights()
    h = x @ w1 + b1
    z = h @ w2 + b2 + h
    z = -np.maximum(z, 0) * 2.0 + z.mean(-1, keepdims=True)
    logits = z @ w3 + b3
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_arithmetic_between_layer_outputs_builds_a_model():
    model = residual_model()
    assert [layer.name for layer in model.layers][1:] == ["first", "second", "head"]
    np.testing.assert_allclose(model.predict(X, verbose=0), reference(model, X), rtol=1e-5,
                               atol=1e-6)


def test_it_trains_and_uses_the_stable_softmax_cross_entropy():
    model = residual_model()
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    first = model.evaluate(X, Y, verbose=0)[0]
    model.fit(X, Y, epochs=20, batch_size=8, verbose=0)
    assert model.evaluate(X, Y, verbose=0)[0] < first
    logits = model.outputs[0]._keras_logits
    assert logits is not None      # the softmax op node keeps its logits for the fused loss


def test_save_and_load_keep_the_op_nodes(tmp_path):
    model = residual_model()
    model.save(tmp_path / "m.hiapi")
    loaded = hiapi.models.load_model(tmp_path / "m.hiapi")
    np.testing.assert_allclose(loaded.predict(X, verbose=0), model.predict(X, verbose=0),
                               rtol=1e-6)


def test_a_model_with_op_nodes_nests_inside_another():
    inner = residual_model()
    inputs = hiapi.Input((6,))
    outer = hiapi.Model(inputs, inner(inputs) * 3.0)
    np.testing.assert_allclose(outer.predict(X, verbose=0), 3.0 * reference(inner, X),
                               rtol=1e-5, atol=1e-6)


def test_operands_in_either_order_and_two_inputs():
    a, b = hiapi.Input((4,)), hiapi.Input((4,))
    out = 1.0 - layers.Dense(4, use_bias=False, kernel_initializer="ones")(a) / (b * b + 1.0)
    model = hiapi.Model([a, b], [out, ops.concatenate([a, b], axis=-1)])
    xa, xb = RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4))
    got, joined = model.predict([xa, xb], verbose=0)
    np.testing.assert_allclose(got, 1.0 - xa.sum(1, keepdims=True) / (xb * xb + 1.0),
                               rtol=1e-5)
    np.testing.assert_allclose(joined, np.concatenate([xa, xb], 1), rtol=1e-6)


def test_an_unsaveable_op_operand_is_named_at_save_time(tmp_path):
    inputs = hiapi.Input((3,))
    loose = Variable(np.ones(3, np.float32), name="loose")
    model = hiapi.Model(inputs, layers.Dense(3)(inputs) * loose.read)
    assert model.predict(np.ones((2, 3)), verbose=0).shape == (2, 3)
    with pytest.raises(ValueError, match="reads .*loose.* belongs to no layer"):
        model.save(tmp_path / "m.hiapi")
    assert not (tmp_path / "m.hiapi").exists()


def test_an_input_outside_the_model_is_named():
    a, b = hiapi.Input((3,), name="a"), hiapi.Input((3,), name="b")
    with pytest.raises(ValueError, match="depend on Input 'b'"):
        hiapi.Model(a, layers.Dense(3)(a) + b)


def dict_model():
    hiapi.utils.set_random_seed(2)
    image, meta = hiapi.Input((6,), name="image_in"), hiapi.Input((2,), name="meta_in")
    hidden = layers.Dense(4, activation="relu")(layers.concatenate([image, meta]))
    return hiapi.Model(inputs={"meta": meta, "image": image},
                       outputs={"score": layers.Dense(1)(hidden),
                                "kind": layers.Dense(3, activation="softmax")(hidden)})


def test_dict_inputs_and_outputs_fit_predict_save_and_nest(tmp_path):
    model = dict_model()
    assert [v.name for v in model.inputs] == ["image_in", "meta_in"]    # sorted keys
    x = {"image": RNG.normal(size=(16, 6)), "meta": RNG.normal(size=(16, 2))}
    y = {"kind": RNG.integers(0, 3, 16), "score": RNG.normal(size=(16, 1))}
    model.compile(optimizer="adam", loss={"kind": "sparse_categorical_crossentropy",
                                          "score": "mse"}, metrics={"kind": ["accuracy"]})
    history = model.fit(x, y, epochs=2, batch_size=8, verbose=0)
    assert {"kind_loss", "score_loss", "kind_accuracy"} <= set(history.history)
    predictions = model.predict(x, verbose=0)
    assert set(predictions) == {"kind", "score"} and predictions["kind"].shape == (16, 3)
    assert set(model.predict_on_batch(x)) == {"kind", "score"}
    model.save(tmp_path / "m.hiapi")
    loaded = hiapi.models.load_model(tmp_path / "m.hiapi")
    again = loaded.predict(x, verbose=0)
    for key in predictions:
        np.testing.assert_allclose(again[key], predictions[key], rtol=1e-6)
    image, meta = hiapi.Input((6,)), hiapi.Input((2,))
    outer = model({"image": image, "meta": meta})
    assert set(outer) == {"kind", "score"}
    wrapper = hiapi.Model([image, meta], outer["score"] * 2.0)
    np.testing.assert_allclose(wrapper.predict([x["image"], x["meta"]], verbose=0),
                               2 * predictions["score"], rtol=1e-5)
