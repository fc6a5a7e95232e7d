"""PyDatasets for the loader tests, at module level so that spawned worker processes can
unpickle them (a class defined in a test function cannot be)."""
import gc
import os
import signal
import time

import numpy as np

import hiapi


def blobs(n=96, features=8, seed=3):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    return (rng.normal(size=(n, features)) + y[:, None]).astype(np.float32), y


class Slices(hiapi.utils.PyDataset):
    """Batches of ``x, y``; each read sleeps a pseudo-random few milliseconds, so parallel
    workers finish out of order; ``fail_at`` raises in that batch, ``kill_at`` kills the
    process reading it, ``report`` (a folder) gets a file per read naming the process and
    the hiapi models alive in it."""

    def __init__(self, x, y, batch=16, fail_at=None, kill_at=None, report=None, jitter=0.004,
                 **kwargs):
        super().__init__(**kwargs)
        self.x, self.y, self.batch = x, y, batch
        self.fail_at, self.kill_at, self.report, self.jitter = fail_at, kill_at, report, jitter

    def __len__(self):
        return -(-len(self.x) // self.batch)

    def __getitem__(self, index):
        time.sleep(self.jitter * ((index * 7919) % 5) / 4)
        if index == self.fail_at:
            raise ValueError(f"bad batch {index}")
        if index == self.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        if self.report is not None:
            models = sum(isinstance(o, hiapi.Model) for o in gc.get_objects())
            with open(os.path.join(self.report, f"{os.getpid()}-{index}"), "w") as handle:
                handle.write(str(models))
        part = slice(index * self.batch, (index + 1) * self.batch)
        return self.x[part], self.y[part]


class Slow(hiapi.utils.PyDataset):
    """Endless slow batches that write their process id into ``report``: a training run
    to interrupt."""

    def __init__(self, report, **kwargs):
        super().__init__(**kwargs)
        self.report = report

    def __len__(self):
        return 1000

    def __getitem__(self, index):
        with open(os.path.join(self.report, str(os.getpid())), "w"):
            pass
        time.sleep(0.05)
        return np.zeros((4, 8), np.float32), np.zeros(4, np.int64)


class Shifting(Slices):
    """Changes itself at each epoch's end, as an augmenting dataset does: worker processes
    must get the new state."""

    shift = 0.0

    def on_epoch_end(self):
        self.shift += 1.0

    def __getitem__(self, index):
        x, y = super().__getitem__(index)
        return x + self.shift, y


class Unsendable(Slices):
    """A batch that cannot be pickled back to the training process."""

    def __getitem__(self, index):
        return lambda: index
