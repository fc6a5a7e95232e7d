"""``PyDataset`` (and its Keras 2 name ``Sequence``): batches by index, for ``fit``,
``evaluate`` and ``predict``.

Subclass it with ``__len__`` (batches per epoch) and ``__getitem__(index)`` returning one whole
batch as ``(x, y)`` or ``(x, y, sample_weight)`` (``x`` alone for ``predict``), where x and y
may be arrays, lists of arrays or dicts keyed by input/output name::

    class Batches(hiapi.utils.PyDataset):
        def __init__(self, x, y, batch_size, **kwargs):
            super().__init__(**kwargs)
            self.x, self.y, self.batch_size = x, y, batch_size

        def __len__(self):
            return -(-len(self.x) // self.batch_size)

        def __getitem__(self, index):
            part = slice(index * self.batch_size, (index + 1) * self.batch_size)
            return self.x[part], self.y[part]

    model.fit(Batches(x, y, 32), epochs=3)      # shuffle=True reorders batches each epoch

Unlike a generator, a PyDataset can be read in any order and restarted, which is why ``fit``
shuffles its batch order per epoch (as Keras does) and why, under
``hiapi.distribute.Strategy``, rank r of N can take batches r, r+N, r+2N, ... of the same
dataset. ``on_epoch_end`` is called after every epoch (reshuffle or augment there).

``workers`` reads batches in that many threads, with ``use_multiprocessing=True`` in that
many spawned processes (which get the pickled dataset, never the model); ``max_queue_size``
bounds how many are read ahead of the step. Batches reach the step in order whatever the
worker count (``hiapi.utils.loaders``; the guide is docs/data.md).
"""
from __future__ import annotations

from typing import Any



class PyDataset:
    def __init__(self, workers: int = 1, use_multiprocessing: bool = False,
                 max_queue_size: int = 10) -> None:
        for name, value in (("workers", workers), ("max_queue_size", max_queue_size)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"PyDataset: {name} must be a positive integer, got {value!r}")
        if not isinstance(use_multiprocessing, bool):
            raise ValueError(f"PyDataset: use_multiprocessing must be True or False, got "
                             f"{use_multiprocessing!r}")
        self._workers = workers
        self._use_multiprocessing = use_multiprocessing
        self._max_queue_size = max_queue_size

    @property
    def workers(self) -> int:
        return getattr(self, "_workers", 1)

    @property
    def use_multiprocessing(self) -> bool:
        return getattr(self, "_use_multiprocessing", False)

    @property
    def max_queue_size(self) -> int:
        return getattr(self, "_max_queue_size", 10)

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__(index), "
                                  f"returning batch number `index` as (x, y) or "
                                  f"(x, y, sample_weight)")

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} must implement __len__(), the "
                                  f"number of batches per epoch")

    @property
    def num_batches(self) -> int:
        """Batches per epoch (Keras's name for ``len(dataset)``)."""
        return len(self)

    def on_epoch_begin(self) -> None:
        """Called before each epoch of ``fit``."""

    def on_epoch_end(self) -> None:
        """Called after each epoch of ``fit`` (and after ``evaluate``/``predict``)."""


Sequence = PyDataset
