"""The executor keeps a view step's output while the step's inputs are the same arrays (so
kernels that recognise their last call's buffers by identity keep their fast path), and only
when the view is memory of its input: a reshape that had to copy is made again at every run."""
import numpy as np

from hiapi.graph import Function, ops, placeholder
from hiapi.graph.variable import Variable


def _executable(f):
    return next(iter(f._executables.values()))


def test_a_view_of_the_same_array_is_the_same_object_and_sees_new_values():
    w = Variable(np.arange(12, dtype=np.float32).reshape(3, 4))
    x = placeholder((None, 4), "float32")
    f = Function([x], ops.exp(x) * ops.expand_dims(ops.sum(w.read, 0), 0))
    values = np.ones((2, 4), np.float32)
    first = f(values)
    executable = _executable(f)
    kept = {slot: view for slot, (_, view) in executable.views.items()}
    assert kept
    w.value[...] = 1.0                          # the Variable's own array, edited in place
    second = f(values)
    assert all(executable.views[slot][1] is view for slot, view in kept.items())
    np.testing.assert_allclose(second, np.e * 3.0 * np.ones((2, 4)), rtol=1e-6)
    assert not np.allclose(first, second)


def test_a_reshape_that_copies_is_made_again_at_every_run():
    w = Variable(np.arange(12, dtype=np.float32).reshape(3, 4))
    f = Function([], ops.reshape(ops.transpose(w.read), (12,)) * 2.0)
    np.testing.assert_array_equal(f(), 2.0 * np.arange(12).reshape(3, 4).T.reshape(12))
    w.value[...] = -1.0
    np.testing.assert_array_equal(f(), -2.0 * np.ones(12))


def test_a_stateful_view_runs_at_every_call():
    """A view whose kernel does more than view (a collective's wait) is called every run."""
    from hiapi.backends import get_backend
    from hiapi.graph.op import Op

    class CountingView(Op):
        name = "test_counting_view"
        view_of = 0
        stateful = True

        def infer(self, x):
            return x.shape, x.dtype

    calls = []
    backend = get_backend()
    backend.register(CountingView.name)(lambda x: calls.append(1) or x)
    try:
        x = placeholder((None, 3), "float32")
        f = Function([x], ops.exp(CountingView()(x)))
        values = np.zeros((2, 3), np.float32)
        for _ in range(3):
            np.testing.assert_array_equal(f(values), np.ones((2, 3)))
        assert len(calls) == 3
    finally:
        del backend.kernels[CountingView.name]
