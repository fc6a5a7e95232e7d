"""``LocalSGDStrategy``: each worker trains on its own batches and the models are averaged
every ``period`` steps (Stich, "Local SGD Converges Fast and Communicates Little", ICLR 2019,
https://arxiv.org/abs/1805.09767; Lin et al., "Don't Use Large Mini-Batches, Use Local SGD",
ICLR 2020).

    strategy = hiapi.distribute.LocalSGDStrategy(period=8)
    with strategy.scope():
        model = make_model()
        model.compile(optimizer=hiapi.optimizers.SGD(0.05), loss=...)
    model.fit(x, y, batch_size=64, epochs=3)          # batch_size is per worker

A separate class, not ``Strategy(algorithm="local_sgd")``: ``Strategy``'s ``algorithm=`` names
the allreduce algorithm, which this class still takes (``LocalSGDStrategy(period=8,
algorithm="ring")``) for the averaging itself. The train step is the one-process step (no
gradient allreduce: each worker applies its own batch's gradient with its own optimizer);
before every ``period``-th step, and at the end of every epoch (so validation, checkpoints and
the model ``fit`` returns are one model), the trainable weights are averaged with one
allreduce. The optimizer slots (momentum, Adam's moments) stay per worker. With ``period=1``
and plain SGD this is synchronous data-parallel SGD exactly (the mean of the workers' steps is
the step of the mean gradient). Everything else (data sharding, logs summed over workers,
rank 0 writing checkpoints, learning-rate schedules and ``scale_lr``) is ``Strategy``'s.
"""
import numpy as np

from hiapi.distribute.strategy import Strategy


class LocalSGDStrategy(Strategy):
    def __init__(self, period=4, **strategy_options):
        if not isinstance(period, int) or isinstance(period, bool) or period < 1:
            raise ValueError(f"{type(self).__name__}: period must be a positive integer "
                             f"(steps between averages), got {period!r}")
        for name, default in (("compression", "none"), ("shard_optimizer_state", False)):
            if strategy_options.get(name, default) != default:
                raise NotImplementedError(
                    f"{type(self).__name__}: {name}={strategy_options[name]!r} is not "
                    f"supported: the workers exchange whole models, not gradients")
        super().__init__(**strategy_options)
        self.period = period
        self._parameters, self._since = [], 0

    def reduce_gradients(self, gradients, variables, optimizer):
        self._parameters = list(variables)
        return gradients                   # each worker steps on its own batch

    def step_inputs(self):
        return []

    def step_values(self, local_n, global_n):
        super().step_values(local_n, global_n)     # progress, for a stall report
        if self._since == self.period:
            self.synchronize()
        self._since += 1
        return []

    average_at_epoch_end = True

    def reduce_totals(self, compiled):
        if self.average_at_epoch_end and self._since:    # every epoch ends on one model
            self.synchronize()
        super().reduce_totals(compiled)

    def end(self, model):
        if self._since:
            self.synchronize()

    def synchronize(self):
        """Replace every worker's weights by the workers' mean (one allreduce)."""
        flat = self._flat()
        self.communicator.allreduce(flat)
        self._unflat(flat / self.size)
        self._since = 0

    # ---- the weights as one buffer ---------------------------------------------------------
    def _flat(self):
        values = [v.numpy().reshape(-1) for v in self._parameters]
        flat = np.concatenate(values) if values else np.zeros(0, np.float32)
        self.stats.record(flat.nbytes, flat.nbytes)
        return flat

    def _unflat(self, flat):
        offset = 0
        for variable in self._parameters:
            n = int(np.prod(variable.shape))
            variable.assign(flat[offset:offset + n].reshape(variable.shape))
            offset += n
