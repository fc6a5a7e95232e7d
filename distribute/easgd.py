"""``EASGDStrategy``: elastic averaging SGD, synchronous form (Zhang, Choromanska and LeCun,
"Deep learning with Elastic Averaging SGD", NeurIPS 2015, https://arxiv.org/abs/1412.6651).

    strategy = hiapi.distribute.EASGDStrategy(tau=4, alpha=0.9 / workers)
    with strategy.scope():
        model = make_model()
        model.compile(optimizer=hiapi.optimizers.SGD(0.05), loss=...)
    model.fit(x, y, batch_size=64, epochs=3)

Each worker i trains its own copy x_i on its own batches; every ``tau`` steps it is pulled
towards a centre variable x~ that every rank keeps a copy of, and the centre towards the
workers, with the old values on both sides (one allreduce of the differences)::

    d_i = x_i - x~;   x_i <- x_i - alpha * d_i;   x~ <- x~ + alpha * sum_i d_i

``alpha`` is the elasticity; the paper's stability condition is ``0 < workers * alpha <= 1``
(enforced); with ``workers * alpha = 1`` the centre becomes exactly the workers' mean. The
centre starts at rank 0's weights, and when ``fit`` ends every rank's model holds the centre,
the result EASGD returns. During ``fit`` the losses, validation and checkpoints are those of
the workers' own copies (summed over workers as for ``Strategy``); a resumed run restarts the
centre from the restored weights. The learning rate, schedules and optimizer are the model's,
applied by each worker to its own copy.
"""
import numpy as np

from hiapi.distribute.local_sgd import LocalSGDStrategy


class EASGDStrategy(LocalSGDStrategy):
    average_at_epoch_end = False       # only elastic steps: the workers stay apart
    def __init__(self, tau=4, alpha=None, **strategy_options):
        super().__init__(period=tau, **strategy_options)
        self.tau = tau
        self.alpha = 0.9 / self.size if alpha is None else alpha
        if not 0 < self.alpha * self.size <= 1:
            raise ValueError(f"EASGDStrategy: alpha={alpha!r} with {self.size} workers gives "
                             f"workers * alpha = {self.alpha * self.size:g}; the elastic "
                             f"update is stable for 0 < workers * alpha <= 1 (alpha <= "
                             f"{1 / self.size:g} here)")
        self.centre = None

    def begin(self, model):
        super().begin(model)                       # rank 0's weights everywhere
        self.centre = np.concatenate([v.numpy().reshape(-1) for v in self._parameters]) \
            if self._parameters else np.zeros(0, np.float32)

    def synchronize(self):
        """One elastic step: workers towards the centre, the centre towards the workers."""
        local = self._flat()
        difference = local - self.centre
        total = self.communicator.allreduce(difference.copy())
        self._unflat(local - self.alpha * difference)
        self.centre += self.alpha * total
        self._since = 0

    def end(self, model):
        if self._since:
            self.synchronize()
        self._unflat(self.centre)                  # fit returns the centre variable
