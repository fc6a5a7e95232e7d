"""Bad or degenerate data is a clear error, never a silent result (issue #16): empty data,
empty predictions with the right shapes, sample weights of the wrong length, class weights
naming no class."""
import numpy as np
import pytest

import hiapi
from hiapi import layers


def classifier(classes=3, activation="softmax", loss="sparse_categorical_crossentropy"):
    hiapi.utils.set_random_seed(0)
    model = hiapi.Sequential([hiapi.Input(shape=(4,)), layers.Dense(classes,
                                                                    activation=activation)])
    model.compile(optimizer=hiapi.optimizers.SGD(0.1), loss=loss, metrics=["accuracy"])
    return model


@pytest.fixture
def data():
    rng = np.random.default_rng(1)
    return rng.normal(size=(32, 4)).astype(np.float32), rng.integers(0, 3, 32)


class TestEmptyData:
    def test_fit_on_no_samples(self, data):
        x, y = data
        with pytest.raises(ValueError, match=r"fit: x is empty \(0 samples\)"):
            classifier().fit(x[:0], y[:0], verbose=0)

    def test_evaluate_on_no_samples(self, data):
        x, y = data
        with pytest.raises(ValueError, match=r"evaluate: x is empty \(0 samples\)"):
            classifier().evaluate(x[:0], y[:0], verbose=0)

    def test_empty_validation_data(self, data):
        x, y = data
        with pytest.raises(ValueError, match=r"fit validation_data: validation_data is empty"):
            classifier().fit(x, y, validation_data=(x[:0], y[:0]), verbose=0)

    def test_predict_on_no_samples_gives_empty_arrays_per_output(self, data):
        x, _ = data
        out = classifier().predict(x[:0], verbose=0)
        assert isinstance(out, np.ndarray) and out.shape == (0, 3) and out.dtype == np.float32
        inputs = hiapi.Input(shape=(4,))
        model = hiapi.Model(inputs, [layers.Dense(3)(inputs), layers.Dense(2)(inputs)])
        first, second = model.predict(x[:0], verbose=0)
        assert first.shape == (0, 3) and second.shape == (0, 2)


class TestSampleWeight:
    def test_wrong_length_names_sample_weight_and_both_lengths(self, data):
        x, y = data
        with pytest.raises(ValueError, match=r"sample_weight has 20 entries but x has 32 "
                                             r"samples; it needs one weight per sample "
                                             r"\(length 32\)"):
            classifier().fit(x, y, sample_weight=np.ones(20), verbose=0)

    def test_wrong_rank(self, data):
        x, y = data
        with pytest.raises(ValueError, match=r"one weight per sample \(shape \(n,\)\), got "
                                             r"shape \(32, 2\)"):
            classifier().fit(x, y, sample_weight=np.ones((32, 2)), verbose=0)

    def test_validation_data_with_sample_weights_weighs_the_validation_loss(self, data):
        x, y = data
        model = classifier()
        weights = np.where(y == 0, 5.0, 1.0).astype(np.float32)
        history = model.fit(x, y, epochs=1, verbose=0, validation_data=(x, y, weights))
        expected = model.evaluate(x, y, sample_weight=weights, verbose=0)[0]
        assert history.history["val_loss"] == [pytest.approx(expected, rel=1e-6)]
        assert expected != pytest.approx(model.evaluate(x, y, verbose=0)[0], rel=1e-3)


class TestClassWeight:
    def test_a_key_that_is_not_a_class_is_an_error(self, data):
        x, y = data
        with pytest.raises(ValueError, match=r"class_weight: key 3 is not a class of the "
                                             r"model's output; the classes are 0\.\.2"):
            classifier().fit(x, y, class_weight={0: 1.0, 3: 2.0}, verbose=0)
        with pytest.raises(ValueError, match=r"key 'cat' is not a class"):
            classifier().fit(x, y, class_weight={"cat": 2.0}, verbose=0)
        binary = classifier(1, "sigmoid", "binary_crossentropy")
        with pytest.raises(ValueError, match=r"key 2 is not a class.*0\.\.1"):
            binary.fit(x, (y > 0).astype(np.float32), class_weight={2: 1.0}, verbose=0)

    def test_missing_classes_weigh_one_as_in_keras(self, data):
        x, y = data
        with_class_weight = classifier()
        with_class_weight.fit(x, y, class_weight={2: 4.0}, shuffle=False, verbose=0)
        with_sample_weight = classifier()
        with_sample_weight.fit(x, y, sample_weight=np.where(y == 2, 4.0, 1.0), shuffle=False,
                               verbose=0)
        for a, b in zip(with_class_weight.get_weights(), with_sample_weight.get_weights()):
            np.testing.assert_array_equal(a, b)

    def test_one_hot_labels(self, data):
        x, y = data
        model = classifier(loss="categorical_crossentropy")
        model.fit(x, hiapi.utils.to_categorical(y, 3), class_weight={1: 0.0}, shuffle=False,
                  verbose=0)
        reference = classifier(loss="categorical_crossentropy")
        reference.fit(x, hiapi.utils.to_categorical(y, 3), sample_weight=(y != 1) * 1.0,
                      shuffle=False, verbose=0)
        for a, b in zip(model.get_weights(), reference.get_weights()):
            np.testing.assert_array_equal(a, b)
