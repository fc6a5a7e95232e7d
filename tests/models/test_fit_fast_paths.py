"""fit()'s fast paths: the finite-data check once per call, the callback hooks every step."""
import numpy as np
import pytest

from hiapi.models import data


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("shape", [(7,), (5, 3), (4, 3, 2), ()])
def test_all_finite_finds_every_bad_value(dtype, shape):
    clean = np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)
    assert data.all_finite(clean)
    for bad in (np.nan, np.inf, -np.inf):
        for position in range(clean.size):
            array = clean.copy()
            array.reshape(-1)[position] = bad
            assert not data.all_finite(array), (bad, position)


def test_all_finite_overflowing_rows_and_strided_views():
    huge = np.full((3, 4), np.finfo(np.float32).max, np.float32)   # row sums overflow
    assert data.all_finite(huge)
    huge[1, 2] = np.nan
    assert not data.all_finite(huge)
    wide = np.ones((6, 8), np.float32)
    wide[2, 1] = np.inf
    assert data.all_finite(wide[:, ::2]) and not data.all_finite(wide[:, 1::2])
    assert data.all_finite(np.zeros((0, 3), np.float32))


def test_callback_list_calls_only_overriding_hooks(monkeypatch):
    from hiapi.callbacks import Callback, CallbackList, LambdaCallback
    base_calls, seen = [], []
    monkeypatch.setattr(Callback, "on_train_batch_begin",
                        lambda self, batch, logs=None: base_calls.append(batch))

    class Overrides(Callback):
        def on_train_batch_begin(self, batch, logs=None):
            seen.append(("subclass", batch, logs))

    hooks = CallbackList([Callback(), Overrides(), LambdaCallback(
        on_train_batch_begin=lambda batch, logs: seen.append(("lambda", batch, logs)))],
        model=None, params={})
    hooks.on_train_batch_begin(0)
    hooks.on_train_batch_begin(1, {"loss": 1.0})
    assert base_calls == []                     # the base class's empty hook is skipped
    assert seen == [("subclass", 0, {}), ("lambda", 0, {}), ("subclass", 1, {"loss": 1.0}),
                    ("lambda", 1, {"loss": 1.0})]
    assert "on_train_batch_begin" in vars(hooks)   # built once, then a plain attribute
