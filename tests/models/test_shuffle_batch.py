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


def test_batch_indices_are_slices_covering_every_sample_once():
    batches = data.batch_indices(103, 10, "batch", np.random.default_rng(1))
    assert all(isinstance(b, slice) for b in batches)
    covered = np.concatenate([np.arange(103)[b] for b in batches])
    assert sorted(covered) == list(range(103)) and len(covered) == 103


@pytest.mark.parametrize("block", [1, 8, 12, 40])
def test_epoch_order_is_a_permutation_of_contiguous_chunks(block):
    order = data.epoch_order(40, block, "batch", np.random.default_rng(2))
    assert sorted(order) == list(range(40))
    for start in range(0, 40, block):
        chunk = order[start:start + block]
        assert list(chunk) == list(range(chunk[0], chunk[0] + len(chunk)))
    assert list(data.epoch_order(5, 2, False, None)) == list(range(5))


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
