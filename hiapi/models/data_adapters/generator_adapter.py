"""Python generators and iterators yielding ``(x, y)`` or ``(x, y, sample_weight)`` batches
(``x`` alone, or ``(x,)``, for ``predict``).

A generator cannot be restarted, so, as in Keras, it is consumed continuously: with
``steps_per_epoch`` each epoch takes the next ``steps_per_epoch`` batches; without it the first
epoch lasts until the generator runs out, and a later epoch finding it empty interrupts
training with Keras's "Your input ran out of data" warning. Under
``hiapi.distribute.Strategy`` every rank consumes its own generator (make each yield its own
share); at every step the ranks check that all of them still have a batch, so one running out
early is an error on every rank rather than a hang.
"""
from hiapi.models import data
from hiapi.models.data_adapters.base import DataAdapter, agreed_batches


class GeneratorAdapter(DataAdapter):
    def __init__(self, source, prepare, plan, steps=None, what="fit", targets=True):
        self.iterator, self.prepare, self.plan = iter(source), prepare, plan
        self.what, self.targets = what, targets
        self.steps = None if steps is None else int(steps)
        plan.agree(what, steps_per_epoch=-1 if self.steps is None else self.steps)
        self.first = self._next()
        if self.first is None:
            raise ValueError(f"{what}: the generator yielded no batches; there is no data")
        self._pending = self.first

    def _next(self):
        try:
            item = next(self.iterator)
        except StopIteration:
            self.exhausted = True
            return None
        batch = self.prepare(*data.unpack_batch(item, self.what, self.targets))
        if len(batch[0][0]) == 0:
            raise ValueError(f"{self.what}: the generator yielded an empty batch (0 samples)")
        first = getattr(self, "first", None)
        if first is not None and [len(part) for part in batch] != [len(p) for p in first]:
            raise ValueError(f"{self.what}: a batch has {_layout(batch)}, the first batch had "
                             f"{_layout(first)}; every batch must have the same structure")
        return batch

    def epoch(self, rng=None, skip=0, shuffle=False):          # a generator's order is its own
        return agreed_batches(self, lambda step: self._take(), skip)

    def _take(self):
        if self._pending is not None:        # the batch read to trace the step
            batch, self._pending = self._pending, None
            return batch
        return None if self.exhausted else self._next()

    def ran_short(self, done, ran):
        return self.exhausted and (ran == 0 or self.steps is not None and done < self.steps)


def _layout(batch):
    xs, ys, weights = batch
    return f"{len(xs)} input(s), {len(ys)} target(s) and {len(weights)} sample weight(s)"
