"""PyDataset(workers=, use_multiprocessing=, max_queue_size=) (issue #31): batches read by
threads or spawned processes reach the step in the order ``workers=1`` gives, so a seeded run
trains the same weights; a worker's exception or death ends the epoch with a clear error in
the training process; Ctrl-C stops the workers; none is left behind."""
import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import time
import traceback
from pathlib import Path

import numpy as np
import pytest

import hiapi
from hiapi import layers
from hiapi.runtime import threads
from hiapi.utils.loaders import ProcessLoader, ThreadLoader, WorkerDied, loader_for

from loader_datasets import Shifting, Slices, Unsendable, blobs
from mpi import interruptible

HERE = Path(__file__).parent
KINDS = {"threads": dict(workers=3), "processes": dict(workers=2, use_multiprocessing=True)}


def classifier():
    hiapi.utils.set_random_seed(0)
    model = hiapi.Sequential([hiapi.Input(shape=(8,)), layers.Dense(16, activation="relu"),
                              layers.Dense(3, activation="softmax")])
    model.compile(optimizer=hiapi.optimizers.SGD(0.1, momentum=0.9),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_loader_for_picks_by_the_keras_arguments():
    x, y = blobs()
    assert type(loader_for(Slices(x, y))).__name__ == "InlineLoader"
    assert isinstance(loader_for(Slices(x, y, workers=2)), ThreadLoader)
    assert isinstance(loader_for(Slices(x, y, use_multiprocessing=True)), ProcessLoader)


@pytest.mark.parametrize("kind", KINDS)
def test_batches_arrive_in_the_order_asked_whatever_worker_finishes_first(kind):
    x, y = blobs()
    dataset = Slices(x, y, **KINDS[kind])
    loader = loader_for(dataset)
    order = [5, 0, 3, 1, 4, 2, 5]
    got = list(loader.items(order))
    loader.close()
    for index, (bx, by) in zip(order, got):
        np.testing.assert_array_equal(bx, dataset[index][0])


def test_read_ahead_is_bounded_by_max_queue_size():
    x, y = blobs(n=400)
    asked = []

    class Recording(Slices):
        def __getitem__(self, index):
            asked.append(index)
            return super().__getitem__(index)

    items = ThreadLoader(Recording(x, y, jitter=0.0), workers=2, max_queue_size=3).items(
        range(25))
    for taken, _ in enumerate(items):
        time.sleep(0.002)            # a slow step: the workers would run far ahead
        assert max(asked) <= taken + 3


@pytest.mark.parametrize("kind", KINDS)
def test_seeded_training_gives_the_same_weights_whatever_the_workers(kind):
    """fit (shuffled, with PyDataset validation), evaluate and predict, against workers=1."""
    x, y = blobs()
    results = []
    for options in ({}, KINDS[kind]):
        model = classifier()
        history = model.fit(Slices(x, y, **options), epochs=3, shuffle=True, verbose=0,
                            validation_data=Slices(x[:48], y[:48], **options))
        results.append((model.get_weights(), history.history,
                        model.evaluate(Slices(x, y, **options), verbose=0),
                        model.predict(Slices(x, y, **options), verbose=0)))
    (w1, h1, e1, p1), (w2, h2, e2, p2) = results
    for a, b in zip(w1, w2):
        np.testing.assert_array_equal(a, b)
    assert h1 == h2 and e1 == e2
    np.testing.assert_array_equal(p1, p2)


def test_thread_budget_counts_the_workers():
    x, y = blobs()
    full = threads.budget().threads
    items = ThreadLoader(Slices(x, y), workers=2, max_queue_size=2).items(range(3))
    next(items)
    assert threads.budget().threads == max(1, full - 2)
    items.close()
    assert threads.budget().threads == full


@pytest.mark.parametrize("kind", KINDS)
def test_an_exception_in_a_worker_ends_fit_with_it_and_its_traceback(kind):
    x, y = blobs()
    with pytest.raises(ValueError, match="bad batch 3") as raised:
        classifier().fit(Slices(x, y, fail_at=3, **KINDS[kind]), shuffle=False, verbose=0)
    text = "".join(traceback.format_exception(raised.value))
    assert "loader_datasets.py" in text and "__getitem__" in text      # the worker's frame
    assert multiprocessing.active_children() == []


def test_spawned_workers_get_the_dataset_and_not_the_model(tmp_path):
    x, y = blobs()
    model = classifier()
    model.fit(Slices(x, y, report=str(tmp_path), **KINDS["processes"]), epochs=1, verbose=0)
    reads = list(tmp_path.iterdir())
    assert reads and {int(p.name.split("-")[0]) for p in reads} - {os.getpid()}
    for read in reads:
        if int(read.name.split("-")[0]) != os.getpid():   # the first batch is read here
            assert read.read_text() == "0"        # no model was copied into the worker


def test_a_killed_worker_is_an_error_naming_it_not_a_hang():
    x, y = blobs()
    start = time.monotonic()
    with pytest.raises(WorkerDied, match=r"'hiapi-loader-\d' \(pid \d+\) died \(killed by "
                                         r"signal SIGKILL\) while loading batch 4"):
        classifier().fit(Slices(x, y, kill_at=4, **KINDS["processes"]), shuffle=False,
                         verbose=0)
    assert time.monotonic() - start < 30
    assert multiprocessing.active_children() == []


def test_ctrl_c_stops_the_workers_and_leaves_no_process(tmp_path):
    """SIGINT to the whole process group, as a terminal's Ctrl-C sends it."""
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(HERE)!r})
        import hiapi
        from hiapi import layers
        from loader_datasets import Slow

        if __name__ == "__main__":
            model = hiapi.Sequential([hiapi.Input(shape=(8,)), layers.Dense(3)])
            model.compile(loss="sparse_categorical_crossentropy")
            try:
                model.fit(Slow({str(tmp_path)!r}, workers=2, use_multiprocessing=True),
                          epochs=5, verbose=0)
            except KeyboardInterrupt:
                print("interrupted", flush=True)
    """))
    process = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True,
                               preexec_fn=interruptible)
    deadline = time.monotonic() + 60
    while len([p for p in tmp_path.iterdir() if p.name.isdigit()]) < 3:    # main + 2 workers
        assert time.monotonic() < deadline and process.poll() is None, process.stderr.read()
        time.sleep(0.1)
    pids = [int(p.name) for p in tmp_path.iterdir() if p.name.isdigit()]
    os.killpg(process.pid, signal.SIGINT)
    out, err = process.communicate(timeout=30)
    assert "interrupted" in out, err
    assert process.returncode == 0
    time.sleep(0.5)
    assert not [pid for pid in pids if alive(pid)]


def test_worker_processes_live_across_epochs_and_stop_on_close_or_an_early_end():
    x, y = blobs()
    loader = loader_for(Slices(x, y, **KINDS["processes"]))
    list(loader.items([0, 1, 2]))
    pids = loader.pids
    list(loader.items([3, 4]))                     # the next epoch: the same processes
    assert loader.pids == pids and all(alive(pid) for pid in pids)
    items = loader.items([0, 1, 2, 3])
    next(items)
    items.close()                                  # stopped early (EarlyStopping, Ctrl-C)
    assert loader.pids == [] and multiprocessing.active_children() == []
    list(loader.items([5]))
    loader.close()
    assert multiprocessing.active_children() == []


def test_workers_get_the_dataset_again_only_when_it_changes_itself_between_epochs():
    x, y = blobs()
    changing = loader_for(Shifting(x, y, **KINDS["processes"]))
    assert changing.changes
    first = list(changing.items([0]))[0][0]
    changing.dataset.on_epoch_end()
    np.testing.assert_array_equal(list(changing.items([0]))[0][0], first + 1)
    changing.close()
    fixed = loader_for(Slices(x, y, **KINDS["processes"]))
    assert not fixed.changes
    list(fixed.items([0]))
    fixed.dataset.x = x + 5          # not announced by an epoch hook: not sent again
    np.testing.assert_array_equal(list(fixed.items([0]))[0][0], x[:16])
    fixed.close()


def test_a_batch_that_cannot_be_sent_back_is_an_error_not_a_hang():
    x, y = blobs()
    loader = loader_for(Unsendable(x, y, **KINDS["processes"]))
    with pytest.raises(Exception, match="pickle") as raised:
        list(loader.items([0, 1]))
    text = "".join(traceback.format_exception(raised.value))
    assert "sending batch 0" in text or sys.version_info < (3, 11)
    assert multiprocessing.active_children() == []
