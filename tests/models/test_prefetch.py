"""Prefetching shuffled batches on a thread (models/prefetch.py): the same batches in the same
order, no thread left behind however an epoch ends, the helper at idle priority and never
waited on, and only where it can pay."""
import os
import threading
import time

import sys

import numpy as np
import pytest

import hiapi
from hiapi.models import data, prefetch


def _prefetch_threads():
    return [t for t in threading.enumerate() if t.name == "hiapi-batch-prefetch"]


def _sets(arrays, kind=data.BatchGatherer, ring=3):
    """The training thread's two buffer sets and the helper's ring of ``ring``."""
    return [kind(arrays) for _ in range(2)], [kind(arrays) for _ in range(ring)]


@pytest.fixture(autouse=True)
def switched_on(monkeypatch):
    """Prefetching on (``HIAPI_PREFETCH=1``; by default it is on Linux only)."""
    monkeypatch.setattr(prefetch, "ENABLED", True)


def _until(condition, seconds=30):
    """Wait (as a step would take time) until ``condition()``: a helper at idle priority on
    a busy test machine may take a while to get a core."""
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.001)
    return condition()


def test_on_where_the_helper_can_idle_unless_told(monkeypatch):
    monkeypatch.delenv("HIAPI_PREFETCH", raising=False)
    assert hiapi.config.prefetch() is None
    assert prefetch.enabled_by_default(None) == (prefetch.IDLE_POLICY is not None)
    assert prefetch.enabled_by_default(None) == sys.platform.startswith("linux")
    monkeypatch.setenv("HIAPI_PREFETCH", "1")
    assert hiapi.config.prefetch() is True and prefetch.enabled_by_default(True)
    monkeypatch.setenv("HIAPI_PREFETCH", "0")
    assert hiapi.config.prefetch() is False and not prefetch.enabled_by_default(False)
    monkeypatch.setenv("HIAPI_PREFETCH", "yes")
    with pytest.raises(ValueError, match="HIAPI_PREFETCH must be '1' or '0', got 'yes'"):
        hiapi.config.prefetch()


@pytest.fixture
def prefetching(monkeypatch):
    """Prefetch even the tests' small batches, on any machine."""
    monkeypatch.setattr(prefetch, "MIN_BYTES", 0)
    monkeypatch.setattr(prefetch, "cores", lambda: 2)
    calls = []
    original = prefetch.batches
    monkeypatch.setattr(prefetch, "batches", lambda *a: calls.append(1) or original(*a))
    return calls


def _model_and_data(seed=5):
    hiapi.utils.set_random_seed(seed)
    model = hiapi.Sequential([hiapi.Input(shape=(6,)), hiapi.layers.Dense(8, activation="relu"),
                              hiapi.layers.Dense(3)])
    model.compile(optimizer=hiapi.optimizers.SGD(0.05, momentum=0.9),
                  loss=hiapi.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    rng = np.random.default_rng(0)
    x = rng.normal(size=(70, 6)).astype(np.float32)
    return model, x, (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 0)


def _train(callbacks=(), **kwargs):
    model, x, y = _model_and_data()
    history = model.fit(x, y, batch_size=16, epochs=3, verbose=0, callbacks=list(callbacks),
                        **kwargs)
    return history.history, [w.copy() for w in model.get_weights()]


def test_batches_are_the_gatherers_batches_in_order(monkeypatch):
    monkeypatch.setattr(prefetch, "cores", lambda: 2)
    arrays = [np.arange(40.0).reshape(20, 2), np.arange(20)]
    indices = [np.random.default_rng(1).permutation(20)[i:i + 6] for i in range(0, 20, 6)]
    expected = [[a[i] for a in arrays] for i in indices]
    own, ring = _sets(arrays)
    seen, from_ring = [], 0
    for k, batch in enumerate(prefetch.batches(own, ring, indices)):
        # the first batch in the training thread's first buffer set; batch k in ring[k % 3],
        # or in own[k % 2] where the helper had not finished it
        held = [own[0]] if k == 0 else [ring[k % len(ring)], own[k % 2]]
        assert any(all(np.shares_memory(b, buf) for b, buf in zip(batch, gatherer.buffers))
                   for gatherer in held)
        from_ring += k > 0 and np.shares_memory(batch[0], ring[k % len(ring)].buffers[0])
        seen.append([b.copy() for b in batch])
        if k == 0:                              # a long step: the helper gathers the rest
            assert _until(lambda: not _prefetch_threads())
    assert from_ring == len(indices) - 1
    for got, want in zip(seen, expected, strict=True):
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
    assert _until(lambda: not _prefetch_threads())


def test_fit_with_prefetching_is_bit_identical(prefetching):
    with_prefetch = _train()
    assert prefetching                                   # the prefetching path ran
    prefetch.ENABLED = False
    try:
        calls = len(prefetching)
        without = _train()
        assert len(prefetching) == calls                 # and here it did not
    finally:
        prefetch.ENABLED = True
    assert with_prefetch[0] == without[0]                # History, bit for bit
    for a, b in zip(with_prefetch[1], without[1]):
        np.testing.assert_array_equal(a, b)
    assert _until(lambda: not _prefetch_threads())


class _StopAt(hiapi.callbacks.Callback):
    def __init__(self, batch, action):
        super().__init__()
        self.batch, self.action = batch, action

    def on_train_batch_end(self, batch, logs=None):
        if batch == self.batch:
            if self.action == "stop":
                self.model.stop_training = True
            else:
                raise self.action


def test_early_stop_ends_the_thread(prefetching):
    history, _ = _train([_StopAt(1, "stop")])
    assert prefetching and len(history["loss"]) == 1
    assert _until(lambda: not _prefetch_threads())


@pytest.mark.parametrize("error", [RuntimeError("boom"), KeyboardInterrupt()])
def test_an_error_in_the_loop_ends_the_thread(prefetching, error):
    with pytest.raises(type(error)) as raised:
        _train([_StopAt(2, error)])
    assert prefetching
    # the traceback still holds fit's frame; the thread must be gone all the same
    assert raised.value is error and not _prefetch_threads()


def test_an_error_while_gathering_is_raised_on_the_training_thread():
    class Failing(data.BatchGatherer):
        def take(self, index):
            if index[0] == 99:
                raise MemoryError("no room for the batch")
            return super().take(index)

    arrays = [np.arange(100.0).reshape(100, 1)]
    indices = [np.array([1, 2]), np.array([99, 3]), np.array([4, 5])]
    batches = prefetch.batches(*_sets(arrays, Failing), indices)
    next(batches)
    with pytest.raises(MemoryError, match="no room"):
        next(batches)
    assert _until(lambda: not _prefetch_threads())


def test_prefetching_only_where_it_can_pay(monkeypatch):
    rows = [np.zeros((1000, 784), np.float32), np.zeros(1000, np.int64)]
    shuffled = [np.arange(128), np.arange(128, 256)]
    monkeypatch.setattr(prefetch, "cores", lambda: 2)
    assert prefetch.wanted(rows, shuffled)
    assert not prefetch.wanted(rows, [slice(0, 128), slice(128, 256)])    # views, no copy
    assert not prefetch.wanted(rows, shuffled[:1])                        # one batch
    assert not prefetch.wanted([r[:, :4] if r.ndim == 2 else r for r in rows], shuffled)
    monkeypatch.setattr(prefetch, "ENABLED", False)
    assert not prefetch.wanted(rows, shuffled)
    monkeypatch.setattr(prefetch, "ENABLED", True)
    # one core for this process (a rank of several on a node, HIAPI_NUM_THREADS=1): the
    # gather stays on the training thread
    monkeypatch.setattr(prefetch, "cores", lambda: 1)
    assert not prefetch.wanted(rows, shuffled)


def _gatherers_of_an_epoch(seed, wait_for_helper=False):
    """Run an epoch of six shuffled 5-row batches through ``prefetch.batches``, check every
    batch and that no thread is left, and return the name of the thread that gathered each
    batch (by batch). With ``wait_for_helper`` each batch is asked for only once the helper
    has it ready or has ended, as when steps are long."""
    where, shared = {}, []

    class Recording(data.BatchGatherer):
        def take(self, index):
            batch = super().take(index)
            where[int(np.flatnonzero(order == index[0])[0]) // 5] = \
                threading.current_thread().name
            return batch

    class Seen(prefetch._Shared):
        __slots__ = ()

        def __init__(self, size):
            super().__init__(size)
            shared.append(self)

    arrays = [np.arange(60.0).reshape(30, 2)]
    order = np.random.default_rng(seed).permutation(30)
    indices = [order[i:i + 5] for i in range(0, 30, 5)]
    original, prefetch._Shared = prefetch._Shared, Seen
    try:
        got, batches = [], prefetch.batches(*_sets(arrays, Recording), indices)
        for k in range(len(indices)):
            if wait_for_helper and k:
                _until(lambda: shared[0].ready > k or not _prefetch_threads())
            got.append(next(batches)[0].copy())
        assert next(batches, None) is None
    finally:
        prefetch._Shared = original
    for g, i in zip(got, indices, strict=True):
        np.testing.assert_array_equal(g, arrays[0][i])
    assert _until(lambda: not _prefetch_threads())
    return [where[k] for k in range(len(indices))]


def test_one_core_mid_epoch_gathers_on_the_training_thread(monkeypatch):
    """The budget may fall to one core during an epoch (data-loading workers started): from
    the batch it would gather on, the training thread gathers them for the rest of the epoch,
    the same batches in the same order."""
    counts = iter([2, 2, 1])                    # asked by the helper before batches 1, 2, 3
    monkeypatch.setattr(prefetch, "cores", lambda: next(counts, 1))
    where = _gatherers_of_an_epoch(seed=2, wait_for_helper=True)
    main, helper = threading.current_thread().name, "hiapi-batch-prefetch"
    assert where == [main, helper, helper, main, main, main]


@pytest.mark.skipif(prefetch.IDLE_POLICY is None, reason="no idle scheduling class (Linux only)")
def test_the_helper_runs_at_idle_priority(monkeypatch):
    monkeypatch.setattr(prefetch, "cores", lambda: 2)
    policies = []

    class Recording(data.BatchGatherer):
        def take(self, index):
            if threading.current_thread().name == "hiapi-batch-prefetch":
                policies.append(os.sched_getscheduler(0))
            return super().take(index)

    arrays = [np.arange(60.0).reshape(30, 2)]
    indices = [np.arange(i, i + 5) for i in range(0, 30, 5)]
    for k, _ in enumerate(prefetch.batches(*_sets(arrays, Recording), indices)):
        if k == 0:
            assert _until(lambda: policies)
    assert set(policies) == {os.SCHED_IDLE}
    assert _until(lambda: not _prefetch_threads())


def test_a_late_helper_is_not_waited_for_and_writes_only_its_own_buffers(monkeypatch):
    """The helper gets no core (here: blocked inside its copy of batch 1): the training thread
    does not wait, it gathers that batch itself, and the copy the helper finishes later lands
    in the helper's ring, not in the batch in use; the helper then skips the batches the
    training thread took, and every batch is right."""
    monkeypatch.setattr(prefetch, "cores", lambda: 2)
    release, finished = threading.Event(), threading.Event()

    class Stalling(data.BatchGatherer):
        def take(self, index):
            helper = threading.current_thread().name == "hiapi-batch-prefetch"
            if helper and not release.is_set():
                release.wait(30)
                batch = super().take(index)
                finished.set()
                return batch
            return super().take(index)

    arrays = [np.arange(80.0).reshape(40, 2)]
    indices = [np.random.default_rng(3).permutation(40)[i:i + 8] for i in range(0, 40, 8)]
    own, ring = _sets(arrays, Stalling)
    batches = prefetch.batches(own, ring, indices)
    first = next(batches)
    np.testing.assert_array_equal(first[0], arrays[0][indices[0]])
    started = time.perf_counter()
    second = next(batches)                      # the helper is stuck on it: taken over
    assert time.perf_counter() - started < 5
    assert np.shares_memory(second[0], own[1].buffers[0])
    release.set()
    assert finished.wait(30)                    # the helper's late copy is done now ...
    np.testing.assert_array_equal(second[0], arrays[0][indices[1]])    # ... elsewhere
    rest = [b[0].copy() for b in batches]
    for got, index in zip(rest, indices[2:], strict=True):
        np.testing.assert_array_equal(got, arrays[0][index])
    assert _until(lambda: not _prefetch_threads())


def test_a_helper_that_keeps_falling_behind_stops_for_the_epoch(monkeypatch):
    """Under load an idle-priority helper gets no core, and may hold the GIL when it loses it:
    after ``LATE_ALLOWANCE`` batches (plus one in ``LATE_EVERY``) that the training thread had
    to gather itself, the helper is told to stop and gathers nothing more this epoch."""
    monkeypatch.setattr(prefetch, "cores", lambda: 2)
    release, takes = threading.Event(), []

    class Stuck(data.BatchGatherer):
        def take(self, index):
            if threading.current_thread().name == "hiapi-batch-prefetch":
                takes.append(index[0])
                release.wait(30)
            return super().take(index)

    arrays = [np.arange(200.0).reshape(100, 2)]
    indices = [np.random.default_rng(6).permutation(100)[i:i + 10] for i in range(0, 100, 10)]
    batches = prefetch.batches(*_sets(arrays, Stuck), indices)
    got = [next(batches)[0].copy() for _ in range(prefetch.LATE_ALLOWANCE + 2)]
    release.set()                               # the helper may run now: it was told to stop
    got += [b[0].copy() for b in batches]
    for g, i in zip(got, indices, strict=True):
        np.testing.assert_array_equal(g, arrays[0][i])
    assert takes == [indices[1][0]]             # the batch it was stuck in, nothing after
    assert _until(lambda: not _prefetch_threads())


@pytest.mark.parametrize("forced", [False, True])
def test_where_idle_priority_is_refused_the_batches_are_gathered_inline(monkeypatch, forced):
    """Without the idle class (a container may refuse it) the helper would compete with the
    step, which made epochs slower: it ends at once and the training thread gathers, for this
    epoch and the next, unless HIAPI_PREFETCH=1 asked for it by name."""
    monkeypatch.setattr(prefetch, "cores", lambda: 2)
    monkeypatch.setattr(prefetch, "run_when_idle", lambda: False)
    monkeypatch.setattr(prefetch, "idle_refused", False)
    monkeypatch.setattr(prefetch, "FORCED", forced)
    where = _gatherers_of_an_epoch(seed=4, wait_for_helper=True)
    helper = "hiapi-batch-prefetch"
    if forced:
        assert where[1:] == [helper] * 5 and not prefetch.idle_refused
    else:
        assert helper not in where and prefetch.idle_refused
    rows = [np.zeros((1000, 784), np.float32)]
    assert prefetch.wanted(rows, [np.arange(128), np.arange(128, 256)]) == forced
    assert _until(lambda: not _prefetch_threads())


def test_an_epoch_does_not_wait_for_a_helper_that_gets_no_core(monkeypatch):
    """Under load an idle-priority helper may not run for seconds: the epoch ends anyway
    (``JOIN_SECONDS``), its ring is ``busy`` until the helper ends, and the adapter's next
    epoch gathers into another ring, so the late copy lands in no batch in use."""
    from hiapi.models.data_adapters.array_adapter import ArrayAdapter
    from hiapi.models.distribution import LOCAL
    monkeypatch.setattr(prefetch, "cores", lambda: 2)
    monkeypatch.setattr(prefetch, "MIN_BYTES", 0)
    release, stuck = threading.Event(), []

    class Stuck(data.BatchGatherer):
        def take(self, index):
            if threading.current_thread().name == "hiapi-batch-prefetch" and \
                    not release.is_set():
                stuck.append(index[0])
                release.wait(30)
            return super().take(index)

    monkeypatch.setattr(data, "BatchGatherer", Stuck)
    x = np.arange(400.0).reshape(100, 4)
    adapter = ArrayAdapter(([x], [], []), 10, LOCAL)
    rng = np.random.default_rng(7)
    started = time.perf_counter()
    first = [b[0].copy() for b, _, _ in adapter.epoch(rng, shuffle=True)]
    assert time.perf_counter() - started < 5 and stuck     # the helper is still in its copy
    ring = adapter.ring
    assert prefetch.busy(ring)
    second = [b[0].copy() for b, _, _ in adapter.epoch(rng, shuffle=True)]
    assert adapter.ring is not ring                         # a ring of its own
    release.set()
    assert _until(lambda: not prefetch.busy(ring) and not _prefetch_threads())
    for batches in (first, second):
        assert sorted(np.concatenate(batches)[:, 0] // 4) == list(range(100))
