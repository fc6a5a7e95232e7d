"""Reading a ``PyDataset``'s batches, inline or in parallel workers, always in order.

``loader_for(dataset)`` picks by the dataset's Keras arguments: ``workers=1`` reads in the
training thread (``InlineLoader``); ``workers > 1`` in that many threads (``ThreadLoader``:
``__getitem__`` code that releases the GIL, numpy or Pillow decoding, runs in parallel), or
with ``use_multiprocessing=True`` in that many spawned processes (``ProcessLoader``: pure-Python
decoding too). Every loader has one method, ``items(indices)``: a generator of
``dataset[i]`` for each index in that order, whatever worker finished first, reading at most
``max_queue_size`` batches ahead of the one the step takes; closing it stops the reads in
flight. So a seeded run trains the same weights with any number of workers.
"""
from hiapi.utils.loaders.inline import InlineLoader
from hiapi.utils.loaders.processes import ProcessLoader, WorkerDied
from hiapi.utils.loaders.threaded import ThreadLoader


def loader_for(dataset):
    """The loader for ``dataset`` (a ``PyDataset``) from its ``workers``,
    ``use_multiprocessing`` and ``max_queue_size``."""
    workers, ahead = dataset.workers, dataset.max_queue_size
    if dataset.use_multiprocessing:
        return ProcessLoader(dataset, workers, ahead)
    if workers > 1:
        return ThreadLoader(dataset, workers, ahead)
    return InlineLoader(dataset)


__all__ = ["InlineLoader", "ThreadLoader", "ProcessLoader", "WorkerDied", "loader_for"]
