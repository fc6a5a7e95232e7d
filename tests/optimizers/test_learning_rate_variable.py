"""``optimizer.learning_rate`` as Keras 3 has it: a float32 Variable for a constant rate that a
script assigns, reads with ``.numpy()`` or ``float()``, and scales by arithmetic; the rate of
the coming update under a schedule. The step reads it every call, so nothing recompiles."""
import numpy as np
import pytest

import hiapi
from hiapi import layers, optimizers
from hiapi.graph import Variable


def test_a_constant_rate_is_a_float32_variable_that_scripts_assign():
    optimizer = optimizers.Adam(1e-3)
    rate = optimizer.learning_rate
    assert isinstance(rate, Variable) and rate.dtype == np.float32 and rate.shape == ()
    assert rate.numpy() == np.float32(1e-3) and float(rate) == float(np.float32(1e-3))
    rate.assign(rate * 0.2)                         # the habit of tf.keras scripts
    assert optimizer.current_learning_rate() == float(np.float32(1e-3) * np.float32(0.2))
    optimizer.learning_rate = 5e-4                  # setting the attribute assigns the same one
    assert optimizer.learning_rate is rate and float(rate) == float(np.float32(5e-4))
    optimizer.learning_rate = optimizer.learning_rate * 2     # a number computed now
    assert float(optimizer.learning_rate) == float(np.float32(1e-3))
    assert optimizer.learning_rate > 1e-5 and optimizer.learning_rate_schedule is None
    assert optimizer.get_config()["learning_rate"] == 0.001     # the number written


def test_under_a_schedule_it_is_the_coming_rate_and_a_number_replaces_the_schedule():
    schedule = optimizers.schedules.ExponentialDecay(0.1, decay_steps=1, decay_rate=0.5)
    optimizer = optimizers.SGD(schedule)
    assert optimizer.learning_rate_schedule is schedule
    assert float(optimizer.learning_rate) == float(np.float32(0.1))
    optimizer.iterations.assign(np.int64(2))
    assert float(optimizer.learning_rate) == float(np.float32(0.025))
    optimizer.learning_rate = 0.01
    assert optimizer.learning_rate_schedule is None and float(optimizer.learning_rate) == \
        float(np.float32(0.01))


@pytest.mark.parametrize("bad", [0.0, -1.0, np.ones(2), "fast"])
def test_a_rate_that_is_not_a_positive_number_is_refused_by_name(bad):
    optimizer = optimizers.SGD(0.1, name="sgd_here")
    with pytest.raises(ValueError, match="sgd_here: learning_rate must be a positive number"):
        optimizer.learning_rate = bad
    assert float(optimizer.learning_rate) == float(np.float32(0.1))    # unchanged


def test_an_assigned_rate_drives_the_next_fit_without_recompiling():
    """Two models from one seed, the second's rate assigned 1e-6 between two fits: its
    second fit moves the weights 1e4 times less than the first model's, through the same
    compiled step."""
    x = np.random.default_rng(0).random((64, 5), dtype=np.float32)
    y = np.random.default_rng(1).random((64, 1), dtype=np.float32)
    moved = []
    for rate in (None, 1e-6):
        hiapi.utils.set_random_seed(3)
        model = hiapi.Sequential([hiapi.Input((5,)), layers.Dense(1)])
        model.compile(optimizer=optimizers.SGD(0.01), loss="mse")
        model.fit(x, y, batch_size=16, epochs=1, verbose=0)
        step = model._step("train", x[:16], y[:16])
        before = model.layers[0].kernel.numpy()
        if rate is not None:
            model.optimizer.learning_rate.assign(rate)
        model.fit(x, y, batch_size=16, epochs=1, verbose=0)
        assert model._step("train", x[:16], y[:16]) is step
        moved.append(np.abs(model.layers[0].kernel.numpy() - before).max())
    assert moved[1] < moved[0] * 1e-3 and moved[1] > 0
