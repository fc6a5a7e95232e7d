"""Keras's ``fit(shuffle="batch")``: batch-sized chunks of the data in a random order, each
chunk a slice of the arrays (nothing gathered)."""
import numpy as np
import pytest

import hiapi
from hiapi import layers
from hiapi.models import data


def test_chunk_starts_shuffle_full_chunks_and_keep_the_partial_one_last():
    rng = np.random.default_rng(0)
    starts = data.chunk_starts(103, 10, rng)
    assert sorted(starts) == list(range(0, 110, 10))
    assert starts[-1] == 100                       # the partial chunk (3 rows) last
    assert starts[:-1] != sorted(starts[:-1])      # the full ones reordered
    assert data.chunk_starts(100, 10, np.random.default_rng(0))[-1] != 100


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_worker_batches_are_slices_covering_every_sample_once(workers):
    parts = [data.worker_batches(103, 10, workers, k, "batch", np.random.default_rng(1))
             for k in range(workers)]
    assert all(isinstance(index, slice) for part in parts for index, _, _ in part)
    covered = np.concatenate([np.arange(103)[index] for part in parts for index, _, _ in part])
    assert sorted(covered) == list(range(103))
    for step in zip(*parts):                      # each global batch one contiguous chunk
        rows = np.concatenate([np.arange(103)[index] for index, _, _ in step])
        assert list(rows) == list(range(rows[0], rows[0] + len(rows)))
        assert [size for _, size, _ in step] == [len(a) for a in np.array_split(rows, workers)]
        assert {whole for _, _, whole in step} == {len(rows)}


@pytest.mark.parametrize("shuffle", [False, True, "batch"])
@pytest.mark.parametrize("n, batch_size, workers", [(103, 10, 1), (103, 10, 4), (41, 5, 3),
                                                    (9, 4, 4), (7, 1, 3)])
def test_worker_batches_split_like_array_split_of_the_global_order(shuffle, n, batch_size,
                                                                   workers):
    """Every worker's share of every global batch is ``np.array_split(chunk, workers)[k]``
    of the one epoch order every worker draws; a tail smaller than the workers is left out."""
    parts = [data.worker_batches(n, batch_size, workers, k, shuffle, np.random.default_rng(5))
             for k in range(workers)]
    order = np.concatenate([np.arange(n)[index] for step in zip(*parts)
                            for index, _, _ in step])
    block = batch_size * workers
    if shuffle is True:
        expected = np.random.default_rng(5).permutation(n)
        assert list(order) == list(expected[:len(order)])
    for s, step in enumerate(zip(*parts)):
        chunk = order[s * block:s * block + step[0][2]]
        for k, (index, size, whole) in enumerate(step):
            assert list(np.arange(n)[index]) == list(np.array_split(chunk, workers)[k])
            assert size == len(np.array_split(chunk, workers)[k]) and whole == len(chunk)
    assert n - len(order) < workers


@pytest.mark.parametrize("bad", ["Batch", "true", 2, None])
def test_other_values_are_refused_naming_the_argument(bad):
    with pytest.raises(ValueError, match="shuffle must be True, False or 'batch'"):
        data.check_shuffle(bad)
    assert data.check_shuffle(np.bool_(True)) is True


def test_fit_trains_on_every_sample_once_per_epoch_in_chunks(monkeypatch):
    x = np.arange(50, dtype=np.float32).reshape(50, 1)
    y = np.zeros((50, 1), np.float32)
    model = hiapi.Sequential([hiapi.Input(shape=(1,)), layers.Dense(1)])
    model.compile(optimizer=hiapi.optimizers.SGD(1e-9), loss="mse")
    seen = []
    real_step = model._step

    def spying_step(kind, *args):
        function = real_step(kind, *args)
        if kind != "train":
            return function

        def train(xb, *rest):
            seen.append(np.array(xb[:, 0]))
            return function(xb, *rest)
        return train
    monkeypatch.setattr(model, "_step", spying_step)
    hiapi.utils.set_random_seed(3)
    model.fit(x, y, batch_size=8, epochs=2, shuffle="batch", verbose=0)
    assert len(seen) == 14                          # 7 batches (6 full, 1 of 2) x 2 epochs
    for epoch in (seen[:7], seen[7:]):
        assert sorted(np.concatenate(epoch)) == list(range(50))
        for batch in epoch:                         # each batch a run of consecutive rows
            assert list(batch) == list(np.arange(batch[0], batch[0] + len(batch)))
        assert len(epoch[-1]) == 2 and epoch[-1][0] == 48
    assert [b[0] for b in seen[:6]] != sorted(b[0] for b in seen[:6])
    assert [b[0] for b in seen[:6]] != [b[0] for b in seen[7:13]]    # a new order each epoch


def test_fit_refuses_an_unknown_shuffle_value():
    model = hiapi.Sequential([hiapi.Input(shape=(1,)), layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    with pytest.raises(ValueError, match="shuffle must be True, False or 'batch', got 'yes'"):
        model.fit(np.zeros((4, 1)), np.zeros((4, 1)), shuffle="yes", verbose=0)
