"""Update values written straight into their Variable's storage (no copy at the end of the
step) only where no later op still reads the old value; the numbers never change."""
import numpy as np
import pytest

from hiapi.backends import get_backend
from hiapi.graph import Function, Variable, ops, placeholder

RNG = np.random.default_rng(3)


def run(outputs, updates, feeds, memory):
    f = Function([feeds[0]], outputs, updates, memory=memory)
    results = f(feeds[1])
    return f, results


def executable(f):
    return next(iter(f._executables.values()))


@pytest.mark.parametrize("memory", ["plan", "none"])
def test_sgd_like_update_is_written_in_place_and_matches(memory):
    start = RNG.normal(size=(4, 3))
    w = Variable(start.copy(), name="w")
    x = placeholder((None, 4))
    loss = ops.sum(ops.matmul(x, w.read) ** 2)
    g = ops.matmul(ops.transpose(x, (1, 0)), 2 * ops.matmul(x, w.read))     # d loss / d w
    data = RNG.normal(size=(5, 4))
    f, (value,) = run([loss], [(w, w.read - 0.1 * g)], (x, data), memory)
    # a backend that checks input on the device (cupy) writes Variables only after the checks
    deferred = getattr(get_backend(), "checks", None) is not None
    assert [v is w for _, v in executable(f).direct_updates] == ([] if deferred else [True])
    assert value == pytest.approx(np.sum((data @ start) ** 2), rel=1e-5)
    np.testing.assert_allclose(w.numpy(), start - 0.1 * data.T @ (2 * data @ start), rtol=1e-5)


def test_old_value_read_after_the_update_keeps_the_copy():
    w = Variable(np.arange(6.0).reshape(2, 3), name="w")
    x = placeholder((None, 2))
    new = w.read * 2.0
    late = ops.matmul(x, new + w.read)           # reads old w after the update value exists
    f, (out,) = run([late], [(w, new)], (x, np.ones((1, 2))), "plan")
    assert executable(f).direct_updates == []
    np.testing.assert_allclose(out, np.ones((1, 2)) @ (np.arange(6.0).reshape(2, 3) * 3))
    np.testing.assert_allclose(w.numpy(), np.arange(6.0).reshape(2, 3) * 2)


def test_old_value_as_an_output_is_returned_unchanged():
    w = Variable(np.ones(3), name="w")
    x = placeholder((None, 3))
    f, (old, total) = run([w.read, ops.sum(x)], [(w, w.read + 1.0)], (x, np.ones((2, 3))),
                          "plan")
    assert executable(f).direct_updates == []
    np.testing.assert_allclose(old, np.ones(3))
    np.testing.assert_allclose(w.numpy(), 2 * np.ones(3))


def test_set_weights_between_steps_is_respected():
    w = Variable(np.zeros(3), name="w")
    x = placeholder((None, 3))
    f = Function([x], [ops.sum(x)], [(w, w.read + 1.0)])
    f(np.ones((1, 3)))
    w.value = np.full(3, 10.0)                   # a new array object, as set_weights may give
    f(np.ones((1, 3)))
    np.testing.assert_allclose(w.numpy(), np.full(3, 11.0))
