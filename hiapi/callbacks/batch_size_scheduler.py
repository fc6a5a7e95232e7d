"""``BatchSizeScheduler``: the batch-size twin of ``LearningRateScheduler``.

Smith, Kindermans, Ying and Le, "Don't Decay the Learning Rate, Increase the Batch Size"
(ICLR 2018, https://arxiv.org/abs/1711.00489): SGD's noise scale is about lr * N / B, so
multiplying the batch size B by k has the effect of dividing the rate by k, with k times
fewer steps per epoch (and larger, better parallelised ones). ``fit`` takes the new size at
the start of the epoch; under a data-parallel strategy ``batch_size`` is per worker, so the
global batch grows with it. A new batch shape compiles the step once (kept per shape).

    # the rate would drop x5 at epochs 30, 60, 80: the batch grows x5 there instead
    schedule = BatchSizeScheduler.instead_of_decay(128, boundaries=[30, 60, 80], factor=5)
    model.fit(x, y, batch_size=128, epochs=90, callbacks=[schedule])

Arrays re-batch, and so does a PyDataset whose ``__len__``/``__getitem__`` follow a
settable ``batch_size`` attribute (``image_dataset_from_directory``'s, for one); a generator
cannot (an error says so).
"""
from __future__ import annotations

from typing import Callable, Sequence

from hiapi.callbacks.callback import Callback


class BatchSizeScheduler(Callback):
    """At the start of each epoch, ``batch_size = schedule(epoch, batch_size)``; the logs
    get ``batch_size``."""

    def __init__(self, schedule: Callable[[int, int], int], verbose: int = 0) -> None:
        super().__init__()
        self.schedule, self.verbose = schedule, verbose
        self.current: int | None = None

    def on_train_begin(self, logs=None):
        self.current = None

    def on_epoch_begin(self, epoch, logs=None):
        previous = self.current if self.current is not None else self._fit_batch_size()
        size = self.schedule(epoch, previous)
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"BatchSizeScheduler: schedule returned {size!r} for epoch "
                             f"{epoch}; expected a positive integer")
        self.current = size
        self.model.set_fit_batch_size(size)
        if self.verbose:
            print(f"Epoch {epoch + 1}: BatchSizeScheduler setting batch size to {size}.")

    def _fit_batch_size(self):
        return int(self.params.get("batch_size") or 32)

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None and self.current is not None:
            logs["batch_size"] = self.current

    @classmethod
    def instead_of_decay(cls, batch_size: int, boundaries: Sequence[int], factor: float = 5.0,
                         max_batch_size: int | None = None,
                         verbose: int = 0) -> "BatchSizeScheduler":
        """Smith et al.'s schedule: where a step decay would divide the rate by ``factor``
        (at each epoch of ``boundaries``), multiply ``batch_size`` by it instead, up to
        ``max_batch_size`` (beyond it the paper decays the rate again: use a
        ``LearningRateScheduler`` for that part)."""
        edges = sorted(int(b) for b in boundaries)

        def schedule(epoch, _):
            size = round(batch_size * factor ** sum(epoch >= edge for edge in edges))
            return size if max_batch_size is None else min(size, max_batch_size)
        return cls(schedule, verbose)
