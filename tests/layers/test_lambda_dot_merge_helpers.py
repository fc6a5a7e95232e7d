"""Lambda, Dot and the lowercase merge helpers against numpy; custom ``call`` signatures
(no ``training``, ``mask``, several positional inputs) as Keras inspects them; Lambda saving
(module functions by name, lambdas only with unsafe deserialization enabled)."""
import numpy as np
import pytest

import hiapi
from hiapi import layers, ops
from hiapi.runtime import settings

RNG = np.random.default_rng(9)
A = RNG.normal(size=(4, 5)).astype(np.float32)
B = RNG.normal(size=(4, 5)).astype(np.float32)


def cube(x):
    return x * x * x


@pytest.fixture(autouse=True)
def restore_settings():
    saved = dict(settings._settings)
    yield
    settings._settings.update(saved)


def test_lambda_forward_with_arguments_and_list_inputs():
    np.testing.assert_allclose(layers.Lambda(cube)(A), A ** 3, rtol=1e-6)
    scale = layers.Lambda(lambda x, s: x * s, arguments={"s": 3.0})
    np.testing.assert_allclose(scale(A), 3 * A, rtol=1e-6)
    pair = layers.Lambda(lambda xs: ops.maximum(xs[0], xs[1]) - ops.mean(xs[1]))
    np.testing.assert_allclose(pair([A, B]), np.maximum(A, B) - B.mean(), rtol=1e-5, atol=1e-6)
    training_aware = layers.Lambda(lambda x, training=None: x * (2.0 if training else 1.0))
    np.testing.assert_allclose(training_aware(A, training=True), 2 * A)
    np.testing.assert_allclose(training_aware(A), A)


def test_lambda_output_shape_and_errors():
    assert layers.Lambda(cube, output_shape=(5,)).compute_output_shape((None, 5)) == (None, 5)
    assert layers.Lambda(lambda x: ops.sum(x, -1)).compute_output_shape((None, 5)) == (None,)
    with pytest.raises(TypeError, match="Lambda 'bad': function must be callable, got int"):
        layers.Lambda(3, name="bad")
    with pytest.raises(TypeError, match="arguments must be a dict"):
        layers.Lambda(cube, arguments=[1])


def test_lambda_saves_a_module_function_by_name(tmp_path):
    inputs = hiapi.Input((5,))
    model = hiapi.Model(inputs, layers.Lambda(cube)(layers.Dense(5)(inputs)))
    model.save(tmp_path / "m.hiapi")
    loaded = hiapi.models.load_model(tmp_path / "m.hiapi")
    assert loaded.layers[-1].function is cube
    np.testing.assert_allclose(loaded.predict(A, verbose=0), model.predict(A, verbose=0))


def test_lambda_bytecode_needs_unsafe_deserialization(tmp_path):
    inputs = hiapi.Input((5,))
    shift = 0.5
    model = hiapi.Model(inputs, layers.Lambda(lambda x: ops.relu(x) + shift)(inputs))
    model.save(tmp_path / "m.hiapi")
    with pytest.raises(ValueError, match="enable_unsafe_deserialization"):
        hiapi.models.load_model(tmp_path / "m.hiapi")
    hiapi.config.enable_unsafe_deserialization()
    loaded = hiapi.models.load_model(tmp_path / "m.hiapi")
    np.testing.assert_allclose(loaded.predict(A, verbose=0), np.maximum(A, 0) + 0.5)


def test_lambda_refuses_to_save_what_json_cannot_hold(tmp_path):
    table = np.ones(5)
    inputs = hiapi.Input((5,))
    model = hiapi.Model(inputs, layers.Lambda(lambda x: x * table)(inputs))
    with pytest.raises(ValueError, match="captures or defaults to a ndarray"):
        model.save(tmp_path / "m.hiapi")


def test_lowercase_merge_helpers():
    a, b = hiapi.Input((5,)), hiapi.Input((5,))
    outputs = [layers.add([a, b]), layers.subtract([a, b]), layers.multiply([a, b]),
               layers.average([a, b]), layers.maximum([a, b]), layers.minimum([a, b]),
               layers.concatenate([a, b]), layers.concatenate([a, b], axis=0),
               layers.dot([a, b], axes=1)]
    got = hiapi.Model([a, b], outputs).predict([A, B], verbose=0)
    expected = [A + B, A - B, A * B, (A + B) / 2, np.maximum(A, B), np.minimum(A, B),
                np.concatenate([A, B], -1), np.concatenate([A, B], 0),
                (A * B).sum(-1, keepdims=True)]
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


def test_dot_layer_batched_and_normalized():
    q = RNG.normal(size=(2, 3, 4)).astype(np.float32)
    k = RNG.normal(size=(2, 6, 4)).astype(np.float32)
    np.testing.assert_allclose(layers.Dot(axes=2)([q, k]), np.einsum("bik,bjk->bij", q, k),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(layers.Dot(axes=(1, 1))([q, q[:, :, :2]]),
                               np.einsum("bki,bkj->bij", q, q[:, :, :2]), rtol=1e-5, atol=1e-6)
    v = RNG.normal(size=(2, 4)).astype(np.float32)
    np.testing.assert_allclose(layers.Dot(axes=(2, 1))([q, v]), np.einsum("bik,bk->bi", q, v),
                               rtol=1e-5, atol=1e-6)
    cosine = layers.Dot(axes=1, normalize=True)([A, B])
    expected = (A * B).sum(1) / np.linalg.norm(A, axis=1) / np.linalg.norm(B, axis=1)
    np.testing.assert_allclose(cosine[:, 0], expected, rtol=1e-5)
    assert layers.Dot.from_config(layers.Dot(axes=(1, 2)).get_config()).axes == (1, 2)
    with pytest.raises(ValueError, match="Dot 'd': axis 1 of .* differ in size"):
        layers.Dot(axes=1, name="d")([hiapi.Input((3,)), hiapi.Input((4,))])
    with pytest.raises(ValueError, match="axes must be an int or a pair"):
        layers.Dot(axes="x")


class NoTraining(layers.Layer):
    def call(self, inputs):
        return inputs * 2.0


class Pair(layers.Layer):
    def build(self, a_shape, b_shape):
        self.w = self.add_weight((a_shape[-1],), "ones", "w")

    def call(self, a, b):
        return a * self.w.read + b


class MaskAware(layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def call(self, inputs, mask=None):
        return inputs if mask is None else inputs * ops.cast(mask, "float32")[..., None]


def test_call_without_training_and_with_several_positional_inputs(tmp_path):
    np.testing.assert_allclose(NoTraining()(A, training=True), 2 * A)
    a, b = hiapi.Input((5,)), hiapi.Input((5,))
    pair = Pair()
    model = hiapi.Model([a, b], NoTraining()(pair(a, b)))
    np.testing.assert_allclose(model.predict([A, B], verbose=0), 2 * (A + B), rtol=1e-6)
    np.testing.assert_allclose(pair([A, B]), A + B, rtol=1e-6)   # a list spreads too
    model.compile("sgd", "mse")
    model.fit([A, B], A, epochs=1, verbose=0)
    model.save(tmp_path / "m.hiapi")
    loaded = hiapi.models.load_model(tmp_path / "m.hiapi", custom_objects={
        "Pair": Pair, "NoTraining": NoTraining})
    np.testing.assert_allclose(loaded.predict([A, B], verbose=0),
                               model.predict([A, B], verbose=0))


def test_call_with_mask_gets_the_mask():
    tokens = np.array([[3, 1, 0, 0]])
    inputs = hiapi.Input((4,), dtype="int32")
    embedded = layers.Embedding(5, 2, mask_zero=True, embeddings_initializer="ones")(inputs)
    out = hiapi.Model(inputs, MaskAware()(embedded)).predict(tokens, verbose=0)
    np.testing.assert_array_equal(out[0, :, 0], [1, 1, 0, 0])


def test_call_keywords_inputs_and_unsupported_ones():
    np.testing.assert_allclose(NoTraining()(inputs=A), 2 * A)
    np.testing.assert_allclose(NoTraining()(A, True), 2 * A)       # training positionally
    with pytest.raises(TypeError, match="Layer 'odd': call arguments other than .*'context'"):
        NoTraining(name="odd")(A, context=B)


class Star(layers.Layer):
    def call(self, first, *rest):
        return first if not rest else first - rest[0]


def test_star_args_spread_only_separate_inputs():
    np.testing.assert_allclose(Star()(A, B), A - B)
    assert np.shape(Star()([A, B])) == (2, 4, 5)      # one list argument stays one input


def test_separate_inputs_to_a_model_act_as_a_list():
    a, b = hiapi.Input((5,)), hiapi.Input((5,))
    model = hiapi.Model([a, b], layers.subtract([a, b]))
    np.testing.assert_allclose(model(A, B), A - B)
    np.testing.assert_allclose(model([A, B]), A - B)
