"""Numpy arrays (or lists/dicts of them): batches sliced from data held in memory."""
from hiapi.models import data, prefetch
from hiapi.models.data_adapters.base import DataAdapter


class ArrayAdapter(DataAdapter):
    """Batches of ``batch_size`` samples; a shuffled epoch permutes all samples (the same
    permutation on every worker, which then takes its part of each global batch)."""

    def __init__(self, arrays, batch_size, plan, steps=None, what="fit", source="x",
                 allow_empty=False):
        xs, ys, weights = arrays
        self.n = data.num_samples(xs, ys + weights)
        if self.n == 0 and not allow_empty:
            raise ValueError(f"{what}: {source} is empty (0 samples); there is nothing to "
                             f"run on")
        self.first, self.batch_size, self.plan, self.what = arrays, batch_size, plan, what
        self.arrays = xs + ys + weights
        self.gather = data.BatchGatherer(self.arrays)
        self.spare_gather = self.ring = None    # more buffer sets, once batches are prefetched
        self.cap = steps
        total = self._count()
        plan.agree(what, samples=self.n, steps=self.steps)
        if total == 0 and self.n:
            raise ValueError(f"{what}: {source} has {self.n} samples, fewer than the "
                             f"{plan.size} workers; each needs at least one")

    def _count(self):
        total = len(self.plan.batches(self.n, self.batch_size, False, None))
        self.steps = total if self.cap is None else min(total, int(self.cap))
        return total

    def rebatch(self, batch_size):
        self.batch_size = batch_size
        self._count()

    def epoch(self, rng=None, skip=0, shuffle=False):
        batches = self.plan.batches(self.n, self.batch_size, shuffle, rng)[
            skip:self.steps]
        indices = [index for index, _, _ in batches]
        if prefetch.wanted(self.arrays, indices):     # batches copied ahead during the steps
            size = prefetch.ring_size(self.arrays, indices)
            if self.ring is None or len(self.ring) != size or prefetch.busy(self.ring):
                self.spare_gather = self.spare_gather or data.BatchGatherer(self.arrays)
                self.ring = [data.BatchGatherer(self.arrays) for _ in range(size)]
            feeds = prefetch.batches((self.gather, self.spare_gather), self.ring, indices)
        else:
            feeds = map(self.gather.take, indices)
        try:
            for feed, (_, local_n, global_n) in zip(feeds, batches):
                yield feed, local_n, global_n
        finally:                  # an epoch stopped early stops its prefetch thread now
            getattr(feeds, "close", lambda: None)()
