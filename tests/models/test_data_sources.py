"""fit / evaluate / predict on every Keras 3 data source (issue #12): arrays, dicts keyed by
input/output name, Python generators and iterators, ``hiapi.utils.PyDataset``; the same data
in the same order trains to the same weights whatever the source. Also the callbacks' test and
predict hooks."""
import itertools

import numpy as np
import pytest

import hiapi
from hiapi import layers

N, BATCH = 96, 16                     # 6 batches


@pytest.fixture(scope="module")
def blobs():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 3, N)
    x = (rng.normal(size=(N, 8)) + y[:, None]).astype(np.float32)
    return x, y


def classifier(seed=0):
    hiapi.utils.set_random_seed(seed)
    model = hiapi.Sequential([hiapi.Input(shape=(8,)), layers.Dense(16, activation="relu"),
                              layers.Dense(3, activation="softmax")])
    model.compile(optimizer=hiapi.optimizers.SGD(0.1, momentum=0.9),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def batches(x, y, batch=BATCH, weights=None):
    """The batches fit(x, y, shuffle=False) takes, in order."""
    for start in range(0, len(x), batch):
        part = slice(start, start + batch)
        yield (x[part], y[part]) if weights is None else (x[part], y[part], weights[part])


class Batches(hiapi.utils.PyDataset):
    def __init__(self, x, y, batch=BATCH, **kwargs):
        super().__init__(**kwargs)
        self.x, self.y, self.batch = x, y, batch
        self.requested, self.epochs_ended = [], 0

    def __len__(self):
        return -(-len(self.x) // self.batch)

    def __getitem__(self, index):
        self.requested.append(index)
        part = slice(index * self.batch, (index + 1) * self.batch)
        return self.x[part], self.y[part]

    def on_epoch_end(self):
        self.epochs_ended += 1


def assert_same_weights(a, b):
    for wa, wb in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_array_equal(wa, wb)


def reference(x, y, epochs=2, **kwargs):
    model = classifier()
    history = model.fit(x, y, batch_size=BATCH, epochs=epochs, shuffle=False, verbose=0,
                        **kwargs)
    return model, history.history


class TestGenerators:
    def test_endless_generator_with_steps_per_epoch_equals_arrays(self, blobs):
        x, y = blobs
        expected, expected_history = reference(x, y)
        model = classifier()
        history = model.fit(itertools.cycle(list(batches(x, y))), steps_per_epoch=N // BATCH,
                            epochs=2, verbose=0)
        assert_same_weights(model, expected)
        assert history.history == expected_history

    def test_steps_per_epoch_consumes_the_generator_continuously(self, blobs):
        x, y = blobs
        expected, _ = reference(x, y, epochs=1)      # 6 steps on batches 0..5
        taken = []

        def generator():
            for index, batch in enumerate(batches(x, y)):
                taken.append(index)
                yield batch

        model = classifier()
        history = model.fit(generator(), steps_per_epoch=2, epochs=3, verbose=0)
        assert taken == [0, 1, 2, 3, 4, 5]                # never restarted
        assert len(history.history["loss"]) == 3
        assert_same_weights(model, expected)

    def test_finite_generator_is_one_epoch_and_a_second_pass_interrupts(self, blobs):
        x, y = blobs
        expected, _ = reference(x, y, epochs=1)
        model = classifier()
        model.fit(batches(x, y), epochs=1, verbose=0)
        assert_same_weights(model, expected)
        model = classifier()
        with pytest.warns(UserWarning, match="Your input ran out of data; interrupting"):
            history = model.fit(batches(x, y), epochs=3, verbose=0)
        assert history.epoch == [0]
        assert_same_weights(model, expected)

    def test_steps_per_epoch_beyond_the_data_interrupts_after_the_short_epoch(self, blobs):
        x, y = blobs
        model = classifier()
        with pytest.warns(UserWarning, match=r"at least `steps_per_epoch \* epochs` batches "
                                             r"\(here 8 batches\)"):
            history = model.fit(batches(x, y), steps_per_epoch=4, epochs=2, verbose=0)
        assert history.epoch == [0, 1]                     # 4 steps, then the last 2

    def test_sample_weights_and_class_weight_from_a_generator(self, blobs):
        x, y = blobs
        weights = np.where(y == 1, 3.0, 1.0).astype(np.float32)
        expected, _ = reference(x, y, epochs=1, sample_weight=weights)
        model = classifier()
        model.fit(batches(x, y, weights=weights), epochs=1, verbose=0)
        assert_same_weights(model, expected)
        model = classifier()
        model.fit(batches(x, y), epochs=1, verbose=0, class_weight={1: 3.0})
        assert_same_weights(model, expected)

    def test_validation_evaluate_and_predict_from_generators(self, blobs):
        x, y = blobs
        expected, expected_history = reference(x, y, validation_data=(x[:48], y[:48]))
        model = classifier()
        validation = itertools.cycle(list(batches(x[:48], y[:48])))
        history = model.fit(itertools.cycle(list(batches(x, y))), steps_per_epoch=6, epochs=2,
                            verbose=0, validation_data=validation, validation_steps=3)
        assert history.history == expected_history
        assert model.evaluate(batches(x, y), verbose=0) == model.evaluate(x, y, batch_size=BATCH,
                                                                         verbose=0)
        assert model.evaluate(batches(x, y), steps=2, verbose=0) == \
            model.evaluate(x[:32], y[:32], batch_size=BATCH, verbose=0)
        arrays = model.predict(x, batch_size=BATCH, verbose=0)
        np.testing.assert_array_equal(model.predict(b[0] for b in batches(x, y)), arrays)
        np.testing.assert_array_equal(model.predict((b[0],) for b in batches(x, y)), arrays)
        np.testing.assert_array_equal(model.predict(batches(x, y), steps=2), arrays[:32])

    def test_validation_generator_running_dry_is_an_error(self, blobs):
        x, y = blobs
        with pytest.raises(ValueError, match="fit validation_data: the data ran out.*"
                                             "validation_steps"):
            classifier().fit(x, y, epochs=2, verbose=0, validation_data=batches(x, y))

    def test_bad_generator_uses(self, blobs):
        x, y = blobs
        model = classifier()
        with pytest.raises(ValueError, match="y must not be given when x is a generator"):
            model.fit(batches(x, y), y, verbose=0)
        with pytest.raises(ValueError, match="validation_split is only supported for arrays"):
            model.fit(batches(x, y), validation_split=0.2, verbose=0)
        with pytest.raises(ValueError, match="a batch must be a tuple"):
            model.fit((b[0] for b in batches(x, y)), verbose=0)
        mixed = iter([(x[:16], y[:16]), (x[16:32], y[16:32], np.ones(16))])
        with pytest.raises(ValueError, match=r"a batch has 1 input\(s\), 1 target\(s\) and 1 "
                                             r"sample weight\(s\), the first batch had 1 input"
                                             r"\(s\), 1 target\(s\) and 0 sample weight"):
            model.fit(mixed, verbose=0)
        with pytest.raises(ValueError, match="the generator yielded no batches"):
            model.fit(iter([]), verbose=0)
        with pytest.raises(ValueError, match="y .the targets. is required"):
            model.fit(x, verbose=0)


class TestPyDataset:
    def test_trains_like_the_arrays_and_ends_every_epoch(self, blobs):
        x, y = blobs
        expected, expected_history = reference(x, y, epochs=3)
        dataset = Batches(x, y)
        model = classifier()
        history = model.fit(dataset, epochs=3, shuffle=False, verbose=0)
        assert_same_weights(model, expected)
        assert history.history == expected_history
        assert dataset.epochs_ended == 3
        assert dataset.requested == [0, 1, 2, 3, 4, 5] * 3     # first batch read once

    def test_len_sets_the_steps_and_steps_per_epoch_caps_them(self, blobs):
        x, y = blobs
        seen = []

        class Steps(hiapi.callbacks.Callback):
            def on_train_batch_end(self, batch, logs=None):
                seen.append(batch)

        classifier().fit(Batches(x, y, batch=40), epochs=1, verbose=0, callbacks=[Steps()])
        assert seen == [0, 1, 2]                                # 40, 40, 16
        seen.clear()
        classifier().fit(Batches(x, y), epochs=1, steps_per_epoch=2, verbose=0,
                         callbacks=[Steps()])
        assert seen == [0, 1]

    def test_shuffle_reorders_batches_each_epoch_repeatably(self, blobs):
        x, y = blobs
        dataset, model = Batches(x, y), classifier(seed=5)
        model.fit(dataset, epochs=3, verbose=0)                      # shuffle=True
        orders = [list(hiapi.random.epoch_generator(epoch, model._shuffle_seed).permutation(6))
                  for epoch in range(3)]
        assert orders[0] != list(range(6)) and orders[0] != orders[1]
        # batch 0 is read once before training (to trace the step) and not read again
        assert dataset.requested == [0] + [i for i in orders[0] if i != 0] + orders[1] + \
            orders[2]
        again = Batches(x, y)
        classifier(seed=5).fit(again, epochs=3, verbose=0)
        assert again.requested == dataset.requested          # same seed, same batch order

    def test_evaluate_and_predict(self, blobs):
        x, y = blobs
        model = classifier()
        model.fit(x, y, epochs=1, verbose=0)
        dataset = Batches(x, y)
        assert model.evaluate(dataset, verbose=0) == model.evaluate(x, y, batch_size=BATCH,
                                                                   verbose=0)
        np.testing.assert_array_equal(model.predict(dataset),
                                      model.predict(x, batch_size=BATCH))
        assert dataset.epochs_ended == 2

    def test_constructor_arguments_and_alias(self):
        assert hiapi.utils.Sequence is hiapi.utils.PyDataset
        dataset = Batches(np.zeros((4, 8)), np.zeros(4), workers=4, use_multiprocessing=True,
                          max_queue_size=3)
        assert (dataset.workers, dataset.use_multiprocessing, dataset.max_queue_size) == \
            (4, True, 3)
        with pytest.raises(ValueError, match="workers must be a positive integer, got 0"):
            Batches(np.zeros((4, 8)), np.zeros(4), workers=0)
        with pytest.raises(ValueError, match="empty"):
            classifier().fit(Batches(np.zeros((0, 8)), np.zeros(0)), verbose=0)
        with pytest.raises(NotImplementedError, match="must implement __len__"):
            classifier().fit(hiapi.utils.PyDataset(), verbose=0)


def two_headed(seed=0):
    hiapi.utils.set_random_seed(seed)
    image = hiapi.Input(shape=(6,), name="image")
    stats = hiapi.Input(shape=(2,), name="stats")
    hidden = layers.Dense(8, activation="relu")(layers.Concatenate()([image, stats]))
    digit = layers.Dense(3, activation="softmax", name="digit")(hidden)
    parity = layers.Dense(1, activation="sigmoid", name="parity")(hidden)
    model = hiapi.Model([image, stats], [digit, parity])
    model.compile(optimizer=hiapi.optimizers.SGD(0.1), metrics={"digit": ["accuracy"]},
                  loss={"digit": "sparse_categorical_crossentropy",
                        "parity": "binary_crossentropy"})
    return model


@pytest.fixture
def two_headed_data(blobs):
    """``blobs`` split as ``two_headed`` takes them: inputs image (6 features) and stats (2),
    outputs digit (the class) and parity (class % 2, one column)."""
    x, y = blobs
    return x[:, :6], x[:, 6:], y, (y % 2).astype(np.float32)[:, None]


class TestDicts:
    def test_dicts_by_input_and_output_name_equal_lists(self, two_headed_data):
        image, stats, y, parity = two_headed_data
        as_lists = two_headed()
        as_lists.fit([image, stats], [y, parity], batch_size=BATCH, epochs=2, shuffle=False,
                     verbose=0)
        as_dicts = two_headed()
        history = as_dicts.fit({"stats": stats, "image": image}, {"parity": parity, "digit": y},
                               batch_size=BATCH, epochs=2, shuffle=False, verbose=0,
                               validation_data=({"image": image, "stats": stats},
                                                {"digit": y, "parity": parity}))
        assert_same_weights(as_dicts, as_lists)
        assert "val_digit_accuracy" in history.history
        assert as_dicts.evaluate({"image": image, "stats": stats}, {"digit": y, "parity": parity},
                                 verbose=0) == as_lists.evaluate([image, stats], [y, parity],
                                                                 verbose=0)
        digit, parity_out = as_dicts.predict({"image": image, "stats": stats})
        assert digit.shape == (N, 3) and parity_out.shape == (N, 1)

    def test_dicts_from_a_generator(self, two_headed_data):
        image, stats, y, parity = two_headed_data
        expected = two_headed()
        expected.fit([image, stats], [y, parity], batch_size=BATCH, shuffle=False, verbose=0)
        model = two_headed()
        model.fit((({"image": image[s], "stats": stats[s]}, {"digit": y[s], "parity": parity[s]})
                   for s in (slice(i, i + BATCH) for i in range(0, N, BATCH))), verbose=0)
        assert_same_weights(model, expected)

    def test_a_key_that_names_nothing_lists_the_names(self, blobs):
        x, y = blobs
        model = two_headed()
        with pytest.raises(ValueError, match=r"key\(s\) \['imagee'\] name no input of the model; "
                                             r"its inputs are \['image', 'stats'\]"):
            model.fit({"imagee": x[:, :6], "stats": x[:, 6:]}, [y, y], verbose=0)
        with pytest.raises(ValueError, match=r"no data for the model's input\(s\) \['stats'\]"):
            model.predict({"image": x[:, :6]})
        with pytest.raises(ValueError, match=r"\['digits'\] name no output.*\['digit', "
                                             r"'parity'\]"):
            model.fit([x[:, :6], x[:, 6:]], {"digits": y, "parity": y}, verbose=0)


class TestCallbackHooks:
    class Recorder(hiapi.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.events = []

        def __getattribute__(self, name):
            if name.startswith("on_") and ("test" in name or "predict" in name):
                return lambda *args: self.events.append(
                    (name,) + tuple(a for a in args if isinstance(a, int)))
            return super().__getattribute__(name)

    def test_evaluate_and_predict_hooks(self, blobs):
        x, y = blobs
        model, recorder = classifier(), self.Recorder()
        model.evaluate(x[:40], y[:40], batch_size=BATCH, verbose=0, callbacks=[recorder])
        assert recorder.events == [("on_test_begin",)] + [
            event for b in range(3) for event in (("on_test_batch_begin", b),
                                                  ("on_test_batch_end", b))] + [("on_test_end",)]
        recorder.events.clear()
        model.predict(x[:40], batch_size=BATCH, callbacks=[recorder])
        assert recorder.events == [("on_predict_begin",)] + [
            event for b in range(3) for event in (("on_predict_batch_begin", b),
                                                  ("on_predict_batch_end", b))] + [
            ("on_predict_end",)]

    def test_predict_batch_end_gets_the_outputs(self, blobs):
        x, _ = blobs
        model, outputs = classifier(), []

        class Shapes(hiapi.callbacks.Callback):
            def on_predict_batch_end(self, batch, logs=None):
                outputs.append(logs["outputs"].shape)

        model.predict(x[:40], batch_size=BATCH, callbacks=[Shapes()])
        assert outputs == [(16, 3), (16, 3), (8, 3)]

    def test_fit_validation_fires_the_test_hooks(self, blobs):
        x, y = blobs
        recorder = self.Recorder()
        classifier().fit(x, y, epochs=2, batch_size=BATCH, verbose=0, callbacks=[recorder],
                         validation_data=(x[:32], y[:32]))
        validation = [("on_test_begin",), ("on_test_batch_begin", 0), ("on_test_batch_end", 0),
                      ("on_test_batch_begin", 1), ("on_test_batch_end", 1), ("on_test_end",)]
        assert recorder.events == validation * 2
