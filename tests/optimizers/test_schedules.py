"""Every schedule's value at chosen steps, against its formula evaluated by hand."""
import math

import pytest

from hiapi.optimizers import schedules


def test_exponential_decay():
    s = schedules.ExponentialDecay(0.1, decay_steps=10, decay_rate=0.5)
    assert s(0) == pytest.approx(0.1)
    assert s(5) == pytest.approx(0.1 * 0.5 ** 0.5)
    assert s(20) == pytest.approx(0.025)
    staircase = schedules.ExponentialDecay(0.1, 10, 0.5, staircase=True)
    assert staircase(9) == pytest.approx(0.1) and staircase(10) == pytest.approx(0.05)


def test_piecewise_constant_decay_boundaries_are_inclusive():
    s = schedules.PiecewiseConstantDecay([100, 200], [1.0, 0.5, 0.1])
    assert [s(0), s(100), s(101), s(200), s(201), s(10**6)] == [1.0, 1.0, 0.5, 0.5, 0.1, 0.1]
    with pytest.raises(ValueError, match="one more entry"):
        schedules.PiecewiseConstantDecay([1, 2], [1.0])


def test_polynomial_decay():
    s = schedules.PolynomialDecay(0.1, decay_steps=100, end_learning_rate=0.01, power=2.0)
    assert s(0) == pytest.approx(0.1)
    assert s(50) == pytest.approx(0.09 * 0.25 + 0.01)
    assert s(100) == pytest.approx(0.01) and s(500) == pytest.approx(0.01)
    cyc = schedules.PolynomialDecay(0.1, 100, 0.0, power=1.0, cycle=True)
    assert cyc(150) == pytest.approx(0.1 * (1 - 150 / 200))


def test_cosine_decay_with_and_without_warmup():
    s = schedules.CosineDecay(0.1, decay_steps=100, alpha=0.1)
    assert s(0) == pytest.approx(0.1)
    assert s(50) == pytest.approx(0.1 * (0.9 * 0.5 + 0.1))
    assert s(100) == pytest.approx(0.01) and s(1000) == pytest.approx(0.01)
    w = schedules.CosineDecay(0.0, decay_steps=100, warmup_target=0.2, warmup_steps=10)
    assert w(0) == 0.0 and w(5) == pytest.approx(0.1) and w(10) == pytest.approx(0.2)
    assert w(60) == pytest.approx(0.2 * 0.5 * (1 + math.cos(math.pi * 0.5)))


def test_linear_warmup_ramps_to_the_wrapped_schedule_without_a_jump():
    inner = schedules.ExponentialDecay(0.4, decay_steps=100, decay_rate=0.5)
    s = schedules.LinearWarmup(inner, warmup_steps=20, initial_learning_rate=0.04)
    assert s(0) == pytest.approx(0.04)
    assert s(10) == pytest.approx(0.04 + (inner(20) - 0.04) * 0.5)
    assert s(20) == pytest.approx(inner(20)) and s(70) == pytest.approx(inner(70))
    constant = schedules.LinearWarmup(0.1, warmup_steps=4)
    assert [constant(i) for i in range(6)] == pytest.approx([0, 0.025, 0.05, 0.075, 0.1, 0.1])


def test_linear_scaling_rule():
    assert schedules.scale_learning_rate(0.1, global_batch=1024, base_batch=256) == \
        pytest.approx(0.4)
    assert schedules.scale_learning_rate(0.1, 8192) == pytest.approx(3.2)
    with pytest.raises(ValueError, match="global_batch must be positive"):
        schedules.scale_learning_rate(0.1, 0)


def test_schedules_round_trip_through_config():
    s = schedules.LinearWarmup(schedules.CosineDecay(0.1, 50, warmup_target=0.3,
                                                     warmup_steps=5), 10, 0.01)
    config = s.get_config() | {"class_name": "LinearWarmup"}
    copy = schedules.deserialize(config)
    assert [copy(i) for i in range(0, 80, 7)] == [s(i) for i in range(0, 80, 7)]
