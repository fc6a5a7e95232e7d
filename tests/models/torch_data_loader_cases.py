"""fit/evaluate/predict on a ``torch.utils.data.DataLoader`` (run by
test_torch_data_loader.py in a process of its own, so torch's threads and libraries do not
leak into the other tests)."""
import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, Dataset, IterableDataset, TensorDataset

import hiapi
from hiapi import layers
from hiapi.models.data_adapters.torch_data_loader_adapter import to_numpy

RNG = np.random.default_rng(0)
X = RNG.normal(size=(40, 4)).astype("float32")
Y = (X[:, 0] > 0).astype("int64")


def model():
    hiapi.utils.set_random_seed(1)
    net = hiapi.Sequential([hiapi.Input((4,)), layers.Dense(8, activation="relu"),
                            layers.Dense(2, activation="softmax")])
    net.compile(optimizer=hiapi.optimizers.SGD(0.1), loss="sparse_categorical_crossentropy",
                metrics=["accuracy"])
    return net


def loader(*arrays, batch_size=8, **kwargs):
    return DataLoader(TensorDataset(*(torch.from_numpy(a) for a in arrays)),
                      batch_size=batch_size, **kwargs)


def test_fit_evaluate_predict_equal_the_same_batches_as_arrays():
    from_arrays, from_loader = model(), model()
    want = from_arrays.fit(X, Y, batch_size=8, epochs=3, shuffle=False, verbose=0)
    got = from_loader.fit(loader(X, Y), epochs=3, verbose=0)
    assert got.history == want.history
    for a, b in zip(from_loader.get_weights(), from_arrays.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert from_loader.evaluate(loader(X, Y), verbose=0) == \
        from_arrays.evaluate(X, Y, batch_size=8, verbose=0)
    np.testing.assert_array_equal(from_loader.predict(loader(X), verbose=0),
                                  from_arrays.predict(X, batch_size=8, verbose=0))


def test_batches_become_numpy_without_copying():
    tensor = torch.arange(12.0, requires_grad=True).reshape(3, 4)
    array = to_numpy(tensor)
    assert isinstance(array, np.ndarray)
    with torch.no_grad():
        tensor[0, 0] = 99.0
    assert array[0, 0] == 99.0                     # the same memory
    nested = to_numpy(({"a": torch.ones(2)}, [torch.zeros(1)], 3))
    assert isinstance(nested[0]["a"], np.ndarray) and nested[2] == 3


def test_sample_weights_validation_data_and_steps_per_epoch():
    weights = np.where(Y == 1, 2.0, 0.5).astype("float32")
    net = model()
    history = net.fit(loader(X, Y, weights), validation_data=loader(X[:16], Y[:16]),
                      epochs=2, verbose=0)
    assert {"loss", "accuracy", "val_loss", "val_accuracy"} <= set(history.history)
    reference = model()
    reference.fit(X, Y, sample_weight=weights, batch_size=8, epochs=2, shuffle=False,
                  verbose=0)
    np.testing.assert_allclose(net.get_weights()[0], reference.get_weights()[0], rtol=1e-6)
    seen = []
    counter = hiapi.callbacks.LambdaCallback(on_train_batch_end=lambda b, l: seen.append(b))
    model().fit(loader(X, Y), steps_per_epoch=2, epochs=2, verbose=0, callbacks=[counter])
    assert seen == [0, 1, 0, 1]


class Pairs(Dataset):
    """Two named inputs per sample: the default collate makes dict batches."""

    def __len__(self):
        return len(X)

    def __getitem__(self, i):
        return {"a": X[i, :2], "b": X[i, 2:]}, Y[i]


class Stream(IterableDataset):
    """No __len__: the epoch lasts until the stream ends."""

    def __iter__(self):
        for start in range(0, len(X), 10):
            yield X[start:start + 10], Y[start:start + 10]


def test_dict_inputs_shuffling_and_streams():
    a, b = hiapi.Input((2,), name="a"), hiapi.Input((2,), name="b")
    joined = layers.Concatenate()([a, b])
    net = hiapi.Model({"a": a, "b": b}, layers.Dense(2, activation="softmax")(joined))
    net.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    net.fit(DataLoader(Pairs(), batch_size=8, shuffle=True), epochs=2, verbose=0)
    assert net.predict(DataLoader(Pairs(), batch_size=8), verbose=0).shape == (40, 2)
    history = model().fit(DataLoader(Stream(), batch_size=None), epochs=3, verbose=0)
    assert len(history.history["loss"]) == 3
    first = model()
    losses = first.fit(loader(X, Y, shuffle=True), epochs=15, verbose=0).history["loss"]
    assert losses[-1] < losses[0]


def test_misuse_is_refused_with_the_source_named():
    with pytest.raises(ValueError, match="y must not be given when x is a DataLoader"):
        model().fit(loader(X, Y), Y, verbose=0)
    with pytest.raises(ValueError, match="validation_split is only supported for arrays; "
                                         "with a DataLoader"):
        model().fit(loader(X, Y), validation_split=0.2, verbose=0)
    with pytest.raises(ValueError, match="the DataLoader yielded no batches"):
        model().fit(loader(X[:0], Y[:0]), verbose=0)
