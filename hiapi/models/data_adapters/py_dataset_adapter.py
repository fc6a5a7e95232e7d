"""``hiapi.utils.PyDataset``: batches by index, in order or (``shuffle=True``) in a new batch
order each epoch, as Keras does. Under ``hiapi.distribute.Strategy`` rank r of N takes batches
r, r+N, r+2N, ... of the epoch's order; the last ``len % N`` batches are dropped so every rank
runs the same number of steps. The dataset's ``workers`` read them (``hiapi.utils.loaders``:
in the training thread, in threads or in spawned processes), each rank its own workers on its
own batches, always delivered in the epoch's order."""
import contextlib

import numpy as np

from hiapi.models import data
from hiapi.models.data_adapters.base import DataAdapter, feed_of
from hiapi.utils.loaders import loader_for


class PyDatasetAdapter(DataAdapter):
    def __init__(self, dataset, prepare, plan, steps=None, what="fit", targets=True):
        self.dataset, self.prepare, self.plan = dataset, prepare, plan
        self.what, self.targets = what, targets
        self.length = int(dataset.num_batches)
        plan.agree(what, batches=self.length)
        if self.length == 0:
            raise ValueError(f"{what}: the PyDataset is empty (len 0); there is no data")
        self.cap = steps
        self._count()
        self.loader = loader_for(dataset)
        # the first batch, read to trace the step, is not read again by the first epoch
        self._cached = (plan.rank, self._checked(plan.rank, dataset[plan.rank]))
        self.first = self._cached[1]

    def _count(self):
        per_rank = self.length // self.plan.size
        if per_rank == 0:
            raise ValueError(f"{self.what}: the PyDataset has {self.length} batches, fewer "
                             f"than the {self.plan.size} workers; each needs at least one")
        self.steps = per_rank if self.cap is None else min(per_rank, int(self.cap))

    @property
    def batch_size(self):
        return getattr(self.dataset, "batch_size", None)

    def rebatch(self, batch_size):
        """A PyDataset whose ``__len__``/``__getitem__`` follow its ``batch_size`` attribute
        (``FileDataset``, ``TimeseriesDataset``, most hand-written ones) re-batches."""
        if not isinstance(self.batch_size, int):
            super().rebatch(batch_size)
        self.dataset.batch_size = batch_size
        self.length, self._cached = int(self.dataset.num_batches), None
        self.loader.close()           # worker processes hold the dataset as it was
        self._count()

    def _checked(self, index, item):
        batch = self.prepare(*data.unpack_batch(item, self.what, self.targets))
        if len(batch[0][0]) == 0:
            raise ValueError(f"{self.what}: batch {index} of the PyDataset is empty "
                             f"(0 samples)")
        return batch

    def epoch(self, rng=None, skip=0, shuffle=False):
        order = rng.permutation(self.length) if shuffle else np.arange(self.length)
        mine = [int(i) for i in order[self.plan.rank::self.plan.size][skip:self.steps]]
        cached, self._cached = self._cached, None
        if cached is not None and cached[0] not in mine:
            cached = None
        ahead = [index for index in mine if cached is None or index != cached[0]]
        with contextlib.closing(self.loader.items(ahead)) as items:
            for step, index in enumerate(mine, skip):
                batch = cached[1] if cached is not None and index == cached[0] else \
                    self._checked(index, next(items))
                local_n = len(batch[0][0])
                yield feed_of(batch), local_n, self.plan.agree_batch(local_n, True, step,
                                                                     self.what)

    def on_epoch_begin(self):
        self.dataset.on_epoch_begin()

    def on_epoch_end(self):
        self.dataset.on_epoch_end()
