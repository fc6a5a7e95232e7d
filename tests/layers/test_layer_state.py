"""Variables as Keras layers use them: ``assign``, ``assign_add``, ``assign_sub``, ``numpy()``
and ``value`` on arrays, and inside ``call`` on non-trainable weights, where an assignment is
an update of the compiled step (train, test and predict alike, as in Keras) and later reads in
the same call see the new value."""
import warnings

import numpy as np
import pytest

import hiapi
from hiapi import layers, ops


class ComputeSum(layers.Layer):
    """Keras's guide "Making new layers and models via subclassing": a running sum."""

    def __init__(self, input_dim):
        super().__init__()
        self.total = self.add_weight(initializer="zeros", shape=(input_dim,), trainable=False)

    def call(self, inputs):
        self.total.assign_add(ops.sum(inputs, axis=0))
        return self.total


def test_compute_sum_guide_pattern_on_arrays():
    my_sum = ComputeSum(2)
    x = np.ones((2, 2), np.float32)
    np.testing.assert_array_equal(my_sum(x), [2.0, 2.0])
    np.testing.assert_array_equal(my_sum(x), [4.0, 4.0])
    assert my_sum.weights == [my_sum.total]
    assert my_sum.non_trainable_weights == [my_sum.total] and my_sum.trainable_weights == []


def test_variable_methods_on_arrays():
    v = hiapi.Variable(np.array([1.0, 2.0], np.float32), trainable=False)
    np.testing.assert_array_equal(v.assign([3.0, 4.0]), [3.0, 4.0])
    v.assign_add(np.array([1.0, 1.0]))
    v.assign_sub(0.5)
    np.testing.assert_array_equal(v.numpy(), [3.5, 4.5])
    value = v.value                                 # outside call: the backend's array
    assert isinstance(value, hiapi.backends.get_backend().xp.ndarray)
    np.testing.assert_array_equal(hiapi.backends.get_backend().to_numpy(value), [3.5, 4.5])
    other = hiapi.Variable(np.array([10.0, 20.0], np.float32))
    v.assign_add(other)
    np.testing.assert_array_equal(v.numpy(), [13.5, 24.5])
    with pytest.raises(ValueError, match="cannot assign a value of shape \\(3,\\)"):
        v.assign(np.zeros(3))
    with pytest.raises(ValueError, match="cannot assign the symbolic tensor .* outside a layer"):
        v.assign(hiapi.Input((2,))[0])


class AddTotal(ComputeSum):
    """Keeps the running sum and adds it to the inputs (so the output has a batch axis)."""

    def call(self, inputs):
        return inputs + super().call(inputs)


def summing_model():
    return hiapi.Sequential([hiapi.Input((2,)), AddTotal(2)])


def test_fit_on_a_model_without_trainable_weights_runs_the_state_updates():
    model = summing_model()
    model.compile(optimizer="sgd", loss="mse", metrics=["mae"])
    x = np.arange(20, dtype=np.float32).reshape(10, 2)
    with pytest.warns(UserWarning, match="has no trainable weights: fit updates only"):
        history = model.fit(x, np.zeros((10, 2)), batch_size=4, epochs=2, shuffle=False,
                            verbose=0)
    total = model.layers[-1].total.numpy()
    np.testing.assert_allclose(total, 2 * x.sum(axis=0))          # every batch, both epochs
    assert set(history.history) == {"loss", "mae"}
    # each batch's output is x + the running total after that batch: epoch 2's mean loss
    total, squares = x.sum(axis=0), []
    for start in range(0, 10, 4):
        total = total + x[start:start + 4].sum(axis=0)
        squares += list(np.mean((x[start:start + 4] + total) ** 2, axis=1))
    assert history.history["loss"][-1] == pytest.approx(np.mean(squares), rel=1e-5)
    assert model.optimizer.iterations.numpy() == 0                 # nothing to apply


def test_evaluate_and_predict_update_state_too_as_in_keras():
    model = summing_model()
    model.compile(loss="mse")
    x = np.ones((6, 2), np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.evaluate(x, np.zeros((6, 2)), batch_size=3, verbose=0)
        np.testing.assert_array_equal(model.layers[-1].total.numpy(), [6.0, 6.0])
        out = model.predict(x, batch_size=3, verbose=0)
    np.testing.assert_array_equal(model.layers[-1].total.numpy(), [12.0, 12.0])
    np.testing.assert_array_equal(out[:3], np.full((3, 2), 10.0))   # 1 + the total after
    np.testing.assert_array_equal(out[3:], np.full((3, 2), 13.0))   # each batch


class Counter(layers.Layer):
    """Counts training steps in an int64 weight, assigns and reads back in one call."""

    def build(self, input_shape):
        self.steps = self.add_weight((), "zeros", "steps", trainable=False, dtype="int64")
        self.scale = self.add_weight((), "ones", "scale", trainable=False)

    def call(self, x, training=None):
        if training:
            self.steps.assign_add(1)
            self.scale.assign(self.scale * 2.0)
            self.scale.assign_sub(1.0)          # a second assignment reads the first: 2s - 1
        return x * self.scale.value             # the new value, as after Keras's assign


def test_assign_in_call_with_python_numbers_and_reading_back():
    inputs = hiapi.Input((1,))
    counter = Counter()
    dense = layers.Dense(1)
    model = hiapi.Model(inputs, dense(counter(inputs)))
    model.compile(optimizer="sgd", loss="mse")
    x = np.ones((8, 1), np.float32)
    model.fit(x, x, batch_size=2, epochs=1, verbose=0)
    assert counter.steps.numpy() == 4 and counter.steps.dtype == np.int64
    assert counter.scale.numpy() == 1.0                  # 2 * 1 - 1, four times
    counter.scale.assign(3.0)
    kernel, bias = dense.get_weights()
    loss = model.train_on_batch(x[:2], x[:2])
    # the step used the value assigned in it, 2 * 3 - 1 = 5
    assert loss == pytest.approx((5.0 * kernel[0, 0] + bias[0] - 1.0) ** 2, rel=1e-5)
    assert counter.scale.numpy() == 5.0 and counter.steps.numpy() == 5


class RunningMean(layers.Layer):
    """A batch-norm-like moving average kept with assign, as Keras layers write it."""

    def __init__(self, momentum=0.5, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum

    def build(self, input_shape):
        self.mean = self.add_weight(input_shape[-1:], "zeros", "mean", trainable=False)

    def call(self, x, training=None):
        if training:
            batch_mean = ops.mean(x, axis=0)
            self.mean.assign(self.mean * self.momentum + batch_mean * (1 - self.momentum))
        return x - self.mean


def test_running_mean_follows_the_formula_over_training_steps():
    model = hiapi.Sequential([hiapi.Input((3,)), RunningMean(0.5),
                              layers.Dense(1, use_bias=False)])
    model.compile(optimizer="sgd", loss="mse")
    x = np.random.default_rng(0).normal(size=(12, 3)).astype(np.float32)
    model.fit(x, np.zeros((12, 1)), batch_size=4, shuffle=False, epochs=1, verbose=0)
    expected = np.zeros(3)
    for start in range(0, 12, 4):
        expected = expected * 0.5 + x[start:start + 4].mean(axis=0) * 0.5
    np.testing.assert_allclose(model.layers[0].mean.numpy(), expected, rtol=1e-5)
    before = model.layers[0].mean.numpy()
    model.predict(x, verbose=0)                   # training=False: no update
    np.testing.assert_array_equal(model.layers[0].mean.numpy(), before)


class AssignsBatch(layers.Layer):
    def build(self, input_shape):
        self.last = self.add_weight(input_shape[1:], "zeros", "last", trainable=False)

    def call(self, x):
        self.last.assign(x)
        return x


class AssignsTrainable(layers.Layer):
    def build(self, input_shape):
        self.w = self.add_weight((), "ones", "w")

    def call(self, x):
        self.w.assign_add(1.0)
        return x * self.w


def test_assignments_in_call_that_cannot_be_state_updates_are_named():
    with pytest.raises(ValueError, match="cannot assign a value of shape \\(None, 2\\), the "
                                         "variable has shape \\(2,\\); a batch-sized value"):
        AssignsBatch()(hiapi.Input((2,)))
    with pytest.raises(ValueError, match="is trainable, so the optimizer sets its value"):
        AssignsTrainable()(hiapi.Input((2,)))


def test_building_a_functional_model_does_not_change_state():
    layer = ComputeSum(2)
    inputs = hiapi.Input((2,))
    model = hiapi.Model(inputs, layer(inputs))
    layer.compute_output_shape((None, 2))
    np.testing.assert_array_equal(layer.total.numpy(), [0.0, 0.0])
    model.predict(np.ones((3, 2), np.float32), verbose=0)
    np.testing.assert_array_equal(layer.total.numpy(), [3.0, 3.0])


def test_a_variable_returned_by_call_comes_back_as_the_variable_on_arrays():
    # the guide prints ``my_sum(x).numpy()``: in Keras the output is the Variable itself
    my_sum = ComputeSum(2)
    y = my_sum(np.ones((2, 2), np.float32))
    assert y is my_sum.total
    np.testing.assert_array_equal(y.numpy(), [2.0, 2.0])
    np.testing.assert_array_equal(my_sum(np.ones((2, 2), np.float32)).numpy(), [4.0, 4.0])
    assert np.asarray(y).dtype == np.float32 and np.asarray(y, np.float64).dtype == np.float64


class ScaledByArray(layers.Layer):
    """``numpy array * weight`` in call: numpy must defer to the Variable's operator."""

    def build(self, input_shape):
        self.k = self.add_weight(shape=(3,), initializer="ones")

    def call(self, x):
        return np.full((3,), 2.0, np.float32) * self.k * x


def test_an_array_times_a_weight_in_call_is_trained():
    model = hiapi.Sequential([hiapi.Input((3,)), ScaledByArray()])
    model.compile(optimizer="sgd", loss="mse")
    model.fit(np.ones((4, 3), np.float32), np.zeros((4, 3), np.float32), verbose=0)
    assert (model.layers[0].k.numpy() < 1.0).all()


def test_numpy_functions_and_operators_of_a_variable_outside_a_step_read_its_value():
    """Eager, as a Keras variable: ``np.sum(layer.kernel)``, ``variable * 0.2`` are numbers
    now; an operator with a symbolic operand (a functional model's input) stays a graph
    value, as every operator in a layer's ``call`` does (the test above)."""
    from hiapi.graph.var import Var
    v = hiapi.Variable(np.array([[1.0, -2.0], [3.0, -4.0]], np.float32))
    assert np.sum(v) == -2.0 and np.mean(v) == -0.5
    np.testing.assert_array_equal(np.abs(v), [[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(np.maximum(v, 0.0), [[1.0, 0.0], [3.0, 0.0]])
    ones = np.ones((2, 2), np.float32)
    for value, expected in ((ones * v, [[1, -2], [3, -4]]), (v * ones, [[1, -2], [3, -4]]),
                            (ones - v, [[0, 3], [-2, 5]]), (np.eye(2, dtype=np.float32) @ v,
                                                            [[1, -2], [3, -4]]),
                            (v * v, [[1, 4], [9, 16]]), (-v, [[-1, 2], [-3, 4]])):
        assert isinstance(value, np.ndarray) and value.dtype == np.float32
        np.testing.assert_array_equal(value, expected)
    assert isinstance(v * hiapi.Input((2,)), Var) and isinstance(hiapi.Input((2,)) + v, Var)


def test_a_scalar_variable_converts_and_compares_by_its_value():
    scalar = hiapi.Variable(np.float32(0.25))
    assert float(scalar) == 0.25 and int(hiapi.Variable(np.int64(3))) == 3
    assert scalar < 0.5 and scalar >= 0.25 and not scalar > 0.25
    assert scalar in [scalar] and len({scalar, scalar}) == 1     # identity, as before
    with pytest.raises(TypeError, match=r"'kernel'.*one element.*\(2,\)"):
        float(hiapi.Variable(np.zeros(2), name="kernel"))


def test_a_weight_has_keras_path_as_its_name():
    layer = layers.Dense(2, name="head")
    layer.build((None, 3))
    assert [w.path for w in layer.weights] == ["head/kernel", "head/bias"]
    assert [w.name for w in layer.weights] == [w.path for w in layer.weights]
