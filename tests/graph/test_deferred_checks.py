"""A backend that checks input on the device and raises later (cupy's ``checks``: out-of-range
labels and embedding indices) must still leave Variables untouched by a failed step. Tested
with a numpy backend whose gather defers its range check the same way, so it runs without a
GPU."""
import numpy as np
import pytest

from hiapi import backends
from hiapi.backends.base import Backend
from hiapi.backends.numpy_backend import backend as numpy_backend
from hiapi.graph import Function, Variable, ops, placeholder


class Deferred:
    """Like cupy's DeferredChecks: kernels add (status, describe); verify raises."""

    def __init__(self):
        self.pending = []

    def add(self, status, describe):
        self.pending.append((status, describe))

    def verify(self):
        pending, self.pending = self.pending, []
        for status, describe in pending:
            message = describe(status)
            if message:
                raise ValueError(message)


@pytest.fixture
def deferred_backend(monkeypatch):
    backend = Backend()
    backend.name = "deferred"
    backend.kernels.update(numpy_backend.kernels)
    backend.checks = Deferred()

    @backend.register("gather")
    def gather(out, table, ids, where):       # no raise here: out-of-range rows read as zeros
        rows = table.shape[0]
        bad = ids[(ids < 0) | (ids >= rows)]
        out[...] = np.where(((ids >= 0) & (ids < rows))[..., None],
                            table[np.clip(ids, 0, rows - 1)], 0)
        backend.checks.add(bad, lambda b: f"{where}: index {b[0]} is out of range" if b.size
                           else None)
    monkeypatch.setattr(backends, "_current", backend)
    return backend


@pytest.mark.parametrize("with_output", [True, False])
def test_failed_deferred_check_leaves_variables_untouched(deferred_backend, with_output):
    table = Variable(np.ones((4, 2), np.float32), name="table")
    ids = placeholder((None,), "int64")
    rows = ops.gather(table.read, ids, where="Embedding 'e'")
    f = Function([ids], [ops.sum(rows)] if with_output else [],
                 updates=[(table, table.read + ops.mean(rows))])
    f(np.array([0, 3]))
    np.testing.assert_array_equal(table.numpy(), 2 * np.ones((4, 2)))   # 1 + mean of ones
    with pytest.raises(ValueError, match=r"Embedding 'e': index 4 is out of range"):
        f(np.array([0, 4]))
    np.testing.assert_array_equal(table.numpy(), 2 * np.ones((4, 2)))   # the step was undone
    assert all(not e.direct_updates for e in f._executables.values())
