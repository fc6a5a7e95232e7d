"""The one interface the trainer's loops read batches through, whatever the data source."""
import warnings


class DataAdapter:
    """A source of batches for ``fit``/``evaluate``/``predict``.

    ``first``: the first batch, already checked and converted (``(xs, ys, weights)``, lists of
    arrays), from which the compiled step is traced before any batch runs.
    ``steps``: batches per epoch on this process, or None when the epoch ends where the
    source runs out (a generator without ``steps_per_epoch``).
    ``epoch(rng, skip, shuffle)``: one epoch's batches, shuffled as ``fit``'s ``shuffle`` says
    (True or ``"batch"``; the numpy Generator ``rng`` draws the order, the same on every
    worker), the first ``skip`` left out (a resumed epoch), as
    ``(feed, local_n, global_n)``: the arrays to feed, this process's batch size and the batch
    size summed over the workers (they differ only under ``hiapi.distribute.Strategy``).
    ``exhausted``: True once a source that cannot restart has run out.
    """
    steps = None
    batch_size = None      # None: the source makes its own batches
    exhausted = False
    what = "fit"

    def epoch(self, rng=None, skip=0, shuffle=False):
        raise NotImplementedError

    def ran_short(self, done, ran):
        """Whether an epoch that stopped after step ``done`` (``ran`` batches, fewer when
        resumed mid-epoch) stopped because the data ran out, which Keras answers by
        interrupting training (``warn_ran_out``)."""
        return False

    def on_epoch_begin(self):
        pass

    def rebatch(self, batch_size):
        """Batches of ``batch_size`` from the next epoch on (``BatchSizeScheduler``); ``steps``
        follows. A source that makes its own batches cannot."""
        raise ValueError(f"{self.what}: this data source makes its own batches (a generator, "
                         f"or a PyDataset without a batch_size attribute), so its batch size "
                         f"cannot change; pass arrays, or a PyDataset whose __len__ and "
                         f"__getitem__ follow a settable batch_size")

    def on_epoch_end(self):
        pass


def agreed_batches(adapter, next_batch, step):
    """``(feed, local_n, global_n)`` for the batches ``next_batch(step)`` reads (None once the
    source has run out), from ``step`` to the adapter's ``steps``; every worker agrees on each
    step, so the epoch ends on all of them when one runs out (sources read batch by batch:
    generators, DataLoaders)."""
    while adapter.steps is None or step < adapter.steps:
        batch = next_batch(step)
        local_n = len(batch[0][0]) if batch is not None else 0
        global_n = adapter.plan.agree_batch(local_n, batch is not None, step, adapter.what)
        if global_n is None:
            return
        yield feed_of(batch), local_n, global_n
        step += 1


def feed_of(batch):
    xs, ys, weights = batch
    return [*xs, *ys, *weights]


def warn_ran_out(adapter, epochs):
    """Keras's warning when a generator runs out before ``fit`` is done with it."""
    need = f" (here {adapter.steps * epochs} batches)" if adapter.steps else ""
    warnings.warn(f"Your input ran out of data; interrupting training. Make sure that your "
                  f"generator can generate at least `steps_per_epoch * epochs` batches{need}; "
                  f"without steps_per_epoch a generator is one epoch of data (arrays and "
                  f"PyDatasets restart every epoch)", UserWarning, stacklevel=4)
