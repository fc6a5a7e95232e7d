"""``torch.utils.data.DataLoader`` as ``x`` for ``fit``/``evaluate``/``predict``, as Keras 3
takes it (torch is optional: nothing here imports it; a DataLoader exists only where torch was
imported already)::

    loader = torch.utils.data.DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    model.fit(loader, epochs=3)

Each batch (``x``, ``(x, y)``, ``(x, y, sample_weight)``, lists and dicts of tensors inside)
becomes numpy arrays without copying: a CPU tensor's ``numpy()`` shares its memory (a GPU
tensor is copied to the host first, as it must be). The DataLoader is iterated afresh every
epoch, so its own sampler orders the batches (``fit``'s ``shuffle`` does not apply, as in
Keras); ``steps_per_epoch`` takes the first that many of each epoch. Under
``hiapi.distribute.Strategy`` every rank iterates its own DataLoader (give each a
``DistributedSampler``); the ranks check at each step that all still have a batch.
"""
import sys

from hiapi.models import data
from hiapi.models.data_adapters.base import DataAdapter, agreed_batches


def is_torch_data_loader(x):
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.utils.data.DataLoader)


def to_numpy(value):
    """A tensor's numpy view (nested lists, tuples and dicts mapped); anything else as is."""
    if isinstance(value, (list, tuple)):
        return type(value)(to_numpy(item) for item in value)
    if isinstance(value, dict):
        return {key: to_numpy(item) for key, item in value.items()}
    if hasattr(value, "detach") and hasattr(value, "numpy"):
        return value.detach().cpu().numpy()        # cpu() returns a CPU tensor itself
    return value


class TorchDataLoaderAdapter(DataAdapter):
    def __init__(self, loader, prepare, plan, steps=None, what="fit", targets=True):
        self.loader, self.prepare, self.plan = loader, prepare, plan
        self.what, self.targets = what, targets
        try:
            length = len(loader)
        except TypeError:                          # an IterableDataset without __len__
            length = None
        self.steps = length if steps is None else \
            int(steps) if length is None else min(int(steps), length)
        plan.agree(what, steps_per_epoch=-1 if self.steps is None else self.steps)
        self._iterator = iter(loader)
        self.first = self._next(self._iterator, 0)
        if self.first is None:
            raise ValueError(f"{what}: the DataLoader yielded no batches; there is no data")
        self._pending = self.first

    def _next(self, iterator, index):
        try:
            item = next(iterator)
        except StopIteration:
            return None
        item = tuple(item) if isinstance(item, list) else item
        batch = self.prepare(*data.unpack_batch(to_numpy(item), self.what, self.targets))
        if len(batch[0][0]) == 0:
            raise ValueError(f"{self.what}: batch {index} of the DataLoader is empty "
                             f"(0 samples)")
        return batch

    def epoch(self, rng=None, skip=0, shuffle=False):     # the DataLoader's sampler orders
        iterator = iter(self.loader) if self._iterator is None else self._iterator
        pending = self._pending
        self._iterator = self._pending = None        # the next epoch iterates afresh
        if skip:                                     # a resumed epoch: skip what ran
            already_read = pending is not None       # the traced batch was the first
            pending = None
            for _ in range(skip - already_read):
                next(iterator, None)
        first = [pending] if pending is not None else []
        return agreed_batches(self, lambda step: first.pop() if first else
                              self._next(iterator, step), skip)
