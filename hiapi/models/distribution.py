"""How the trainer splits work between processes. ``Local`` is the one-process behaviour;
``hiapi.distribute.Strategy`` implements the same interface over MPI, so the training loop is
one loop whether or not it runs under ``mpiexec``."""
from hiapi.models import data


class Local:
    rank, size, is_chief = 0, 1, True
    serves = False          # a parameter server's fit serves instead of training

    @property
    def evaluation_plan(self):
        """The plan evaluate and validation use (a parameter-server job evaluates
        locally on every rank)."""
        return self

    def batches(self, n, batch_size, shuffle, rng):
        """This process's batches of one epoch: (indices, local size, global size)."""
        return data.worker_batches(n, batch_size, 1, 0, shuffle, rng)

    def agree(self, what, **counts):
        """Under a Strategy: check that every worker holds the same amount of data."""

    def agree_batch(self, local_n, has_batch, step, what):
        """The batch size summed over workers (None when the data has run out)."""
        return local_n if has_batch else None

    def global_batch(self, local_n):
        """The global batch of a step in which this process was handed ``local_n`` samples
        (``train_on_batch``): one process's own batch here; under a strategy, the samples of
        every process that holds its own (data-parallel replicas, not pipeline stages or
        tensor parts, which share theirs)."""
        return local_n * self.size

    def step_inputs(self):
        return []

    def step_values(self, local_n, global_n):
        return []

    def reduce_gradients(self, gradients, variables, optimizer):
        return gradients

    def get_updates(self, optimizer, gradients, variables):
        return optimizer.get_updates(gradients, variables)

    def begin(self, model):
        pass

    def reduce_totals(self, compiled):
        pass

    def gather_totals(self, vector):
        """Before rank 0 writes a mid-epoch backup: the workers' running loss/metric totals,
        one row per worker (``BackupAndRestore`` restores each worker's own)."""
        return [vector]

    def consolidate(self, model):
        """Before a save, on every worker: gather state kept sharded (ZeRO) onto rank 0."""

    def on_epoch_begin(self, epoch):
        pass

    def end(self, model):
        """After the last training step of ``fit``."""

    def serve(self, model):
        """A server rank's ``fit`` (only where ``serves``)."""
        raise NotImplementedError

    def guard(self, fn, *args, **kwargs):
        return fn(*args, **kwargs)


LOCAL = Local()
