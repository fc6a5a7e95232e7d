"""``ParameterServerStrategy``: sharded parameter servers and asynchronous workers behind ``fit``.

    strategy = hiapi.distribute.ParameterServerStrategy(servers=1, staleness=4)
    with strategy.scope():
        model = make_model()
        model.compile(optimizer=hiapi.optimizers.SGD(0.05), loss=..., metrics=["accuracy"])
    model.fit(x, y, batch_size=64, epochs=3)      # the same script on every rank

Under ``mpiexec -n N`` the last ``servers`` ranks are servers and ranks 0..N-servers-1 are
workers (so rank 0, which prints and writes checkpoints, is a worker). A server's ``fit`` runs
the serve loop (``server.py``) until every worker is done; a worker's ``fit`` trains on its
share of each global batch, its train step ending in a push of the gradients and a pull of
the new weights (``worker.py``). ``staleness=0`` is synchronous (equal to data-parallel
training on the workers' global batch), ``staleness=s`` stale synchronous parallel,
``staleness=None`` Downpour; ``backup_workers=b`` lets each synchronous step go on with the
first W-b gradients (``policies.py``).

Without ``mpiexec`` (one process) there is no server: ``fit`` trains locally.
"""
import sys
import traceback
import zlib

import numpy as np

from hiapi import random as _random
from hiapi.runtime import state_writes
from hiapi.backends import get_backend
from hiapi.distribute import compression as compression_module
from hiapi.distribute.communicator import MPICommunicator
from hiapi.distribute.data_agreement import agree_counts
from hiapi.distribute.parameter_server import policies
from hiapi.distribute.parameter_server.layout import Layout
from hiapi.distribute.parameter_server.server import Server
from hiapi.distribute.parameter_server.stats import ParameterServerStats
from hiapi.distribute.parameter_server.worker import (Client, PushPull, Pulled,
                                                     register_kernels)
from hiapi.models.strategy_scope import strategy_scope
from hiapi.models import data
from hiapi.models.distribution import LOCAL, Local


class ParameterServerStrategy(Local):
    def __init__(self, servers=1, staleness=0, backup_workers=0, compression="none",
                 worker_timeout=60.0, **compression_options):
        _check_arguments(servers, staleness, backup_workers, worker_timeout)
        self.staleness, self.backup_workers = staleness, int(backup_workers)
        self.worker_timeout = float(worker_timeout)
        self.compressor = compression_module.get(compression, **compression_options)
        self.stats = ParameterServerStats()
        self.client, self._fitting, self._init_sent = None, False, False
        self._connect(int(servers))
        if hasattr(self.compressor, "reseed"):
            self.compressor.reseed(self.world_rank)
        self.compressor.workers = self.workers
        if self.world_size > 1:
            self.make_policy()                 # argument errors now, on every rank

    def _connect(self, servers):
        try:
            from mpi4py import MPI
        except ImportError:
            MPI = None
        world_size = MPI.COMM_WORLD.Get_size() if MPI else 1
        self.world_rank = MPI.COMM_WORLD.Get_rank() if MPI else 0
        self.world_size = world_size
        if world_size == 1:                    # one process: no server, plain local training
            self.workers, self.servers, self.rank, self.size = 1, 0, 0, 1
            return
        if servers >= world_size:
            raise ValueError(f"ParameterServerStrategy: servers={servers} leaves no worker "
                             f"among the {world_size} ranks; use servers < {world_size}")
        if get_backend().name == "cupy":
            raise NotImplementedError("ParameterServerStrategy runs on the host: use the "
                                      "numpy or numba backend")
        self.MPI, self.servers = MPI, servers
        self.workers = world_size - servers
        self.comm = MPI.COMM_WORLD.Dup()       # its own context: no clash with other traffic
        self.world = MPICommunicator(self.comm)
        is_server = self.world_rank >= self.workers
        split = self.comm.Split(int(is_server), self.world_rank)
        self.communicator = MPICommunicator(split)
        self.server_comm = split if is_server else None
        self.rank, self.size = self.world_rank, self.workers
        self.layout = None

    # ---- who is who ------------------------------------------------------------------------
    @property
    def is_chief(self):
        return self.world_rank == 0

    @property
    def serves(self):
        return self.world_rank >= self.workers

    @property
    def evaluation_plan(self):
        """Evaluation is local: each rank evaluates all of the data on the weights it holds
        (no collective, so a slow or dead worker never blocks another's validation)."""
        return LOCAL

    def scope(self):
        return strategy_scope(self)

    def scale_lr(self, learning_rate, base_batch=256, per_worker_batch=None):
        """Linear scaling for what one update averages: the batches of the W - b workers
        whose gradients make a synchronous step (``staleness=0``), one worker's batch
        otherwise."""
        per_update = (per_worker_batch or base_batch) * (
            self.workers - self.backup_workers if self.staleness == 0 else 1)
        return learning_rate * per_update / base_batch

    def make_policy(self):
        return policies.make(self.staleness, self.backup_workers, self.workers)

    # ---- data: each worker its share of every global batch of the workers ----------------------
    def batches(self, n, batch_size, shuffle, rng):
        mine = min(self.world_rank, self.workers - 1)     # servers count, never iterate
        return data.worker_batches(n, batch_size, self.workers, mine, shuffle, rng)

    def agree(self, what, **counts):
        if self.world_size > 1:
            agree_counts(self.world, what, counts)

    def step_values(self, local_n, global_n):
        if self.world_size > 1 and not self._fitting:
            raise RuntimeError("ParameterServerStrategy trains only inside fit() (the servers "
                               "serve there); train_on_batch and profile are not supported")
        if self.client is not None:
            self.client.local_n = local_n
        if self.world_size == 1:               # no server counts for us
            self.stats.pushed(0)
        return []

    # ---- the graph rewrite -------------------------------------------------------------------
    def reduce_gradients(self, gradients, variables, optimizer):
        if self.world_size == 1 or self.serves:
            return gradients               # a server never runs the worker's step
        register_kernels(get_backend())
        self.layout = Layout(variables, range(self.workers, self.world_size))
        self.client = Client(self, variables)
        gradients = [g if g is not None else v.read * 0.0 for g, v in zip(gradients, variables)]
        token = PushPull(self.client)(*gradients)
        return [Pulled(self.client, i, v.shape, v.dtype)(token) for i, v in enumerate(variables)]

    def get_updates(self, optimizer, gradients, variables):
        if self.world_size == 1:
            return optimizer.get_updates(gradients, variables)
        if self.serves:
            return []
        return list(zip(variables, gradients))      # the pulled values

    # ---- fit integration -------------------------------------------------------------------
    def begin(self, model):
        if self.world_size == 1:
            return
        self._check_same_model(model)
        if self.layout is None:                 # a server: the same layout as the workers
            self.layout = Layout(model.trainable_weights, range(self.workers, self.world_size))
        for variable in model.weights + model.state_variables + [model.optimizer.iterations]:
            self.world.bcast(variable.storage, root=0)
        state_writes.note()
        seed = np.array([_random.model_shuffle_seed(model)], np.int64)
        model._shuffle_seed = int(self.world.bcast(seed, root=0)[0])
        self._take_over_momentum(model.optimizer)
        if self.client is not None:
            self.client.model = model
            self.client.reset()
        self._fitting, self._init_sent = True, False

    def serve(self, model):
        """A server's ``fit``: serve until every worker is done; returns an empty History."""
        from hiapi.callbacks import History
        try:
            Server(self, model).serve()
        finally:
            self._fitting = False
        model.history = History()
        model.history.set_model(model)
        return model.history

    def on_epoch_begin(self, epoch):
        self.compressor.on_epoch_begin(epoch)
        self._send_init()

    def _send_init(self):
        if self.world_rank == 0 and self.world_size > 1 and not self._init_sent:
            self.client.send_init()
            self._init_sent = True

    def end(self, model):
        """A worker's ``fit`` is over: tell the servers, take the final weights and stats."""
        if self.world_size == 1 or self.serves:
            return
        self._send_init()
        self.client.finish()
        self._fitting = False

    def gather_totals(self, vector):
        """Rank 0's running totals only: a collective among workers would wait for the
        slowest one at every mid-epoch backup, and never return with a dead one. After a
        mid-epoch resume rank 0 logs the whole epoch; the other workers log the epoch's
        batches since the resume."""
        return [vector]

    def consolidate(self, model):
        """Before rank 0 saves during ``fit`` (``ModelCheckpoint``, ``BackupAndRestore``): fill
        its copy of the optimizer state from the servers, with their weights (a pull), so the
        file is what one process writes. Point-to-point, not a collective: the other ranks do
        nothing. After ``fit`` every worker already holds the final state (``end``)."""
        if self.world_rank != 0 or self.world_size == 1 or not self._fitting:
            return
        self._send_init()                      # the servers take the init first
        self.client.fetch_state()

    def abort(self, code=1):
        self.world.abort(code)

    def guard(self, fn, *args, **kwargs):
        """Run ``fn``; an exception on this rank ends the whole job with its traceback."""
        try:
            return fn(*args, **kwargs)
        except BaseException:
            if self.world_size == 1:
                raise
            sys.stderr.write(f"[hiapi rank {self.world_rank}/{self.world_size}] fit failed; "
                             f"aborting the job:\n{traceback.format_exc()}")
            sys.stderr.flush()
            self.abort(1)
            raise

    def _check_same_model(self, model):
        signature = ";".join(f"{v.shape}:{v.dtype}" for v in model.weights)
        mine = np.array([zlib.crc32(signature.encode()), len(model.weights)], np.int64)
        everyone, _ = self.world.allgather(mine)
        differing = [r for r, row in enumerate(everyone.reshape(-1, 2))
                     if not np.array_equal(row, everyone[:2])]
        if differing:
            raise ValueError(f"ParameterServerStrategy: rank(s) {differing} built a different "
                             f"model than rank 0 (parameter shapes/dtypes differ)")

    def _take_over_momentum(self, optimizer):
        """DGC keeps the momentum on the worker; the servers' SGD then applies none."""
        if isinstance(self.compressor, compression_module.DGC):
            from hiapi.optimizers import SGD
            if self.compressor.momentum is None:
                self.compressor.momentum = optimizer.momentum if isinstance(optimizer, SGD) \
                    else 0.0
            if isinstance(optimizer, SGD):
                optimizer.momentum_applied_elsewhere = True


def _check_arguments(servers, staleness, backup_workers, worker_timeout):
    if not isinstance(servers, int) or servers < 1:
        raise ValueError(f"ParameterServerStrategy: servers must be a positive integer, got "
                         f"{servers!r}")
    if staleness is not None and (not isinstance(staleness, int) or staleness < 0):
        raise ValueError(f"ParameterServerStrategy: staleness must be None (asynchronous) or "
                         f"an integer >= 0, got {staleness!r}")
    if not isinstance(backup_workers, int) or backup_workers < 0:
        raise ValueError(f"ParameterServerStrategy: backup_workers must be an integer >= 0, "
                         f"got {backup_workers!r}")
    if not worker_timeout > 0:
        raise ValueError(f"ParameterServerStrategy: worker_timeout must be > 0 seconds, got "
                         f"{worker_timeout!r}")
