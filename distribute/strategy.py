"""``Strategy``: synchronous data-parallel training behind ``fit``.

    strategy = hiapi.distribute.Strategy(compression="dgc", sparsity=0.999)
    with strategy.scope():
        model = make_model()
        model.compile(optimizer=hiapi.optimizers.SGD(
            learning_rate=strategy.scale_lr(0.1, base_batch=128), momentum=0.9), loss=...)
    model.fit(x, y, batch_size=128, epochs=10)       # batch_size is per worker

Run with ``mpiexec -n 4 python train.py``; without mpiexec the same script runs on one process.
What the strategy does:

- a graph rewrite of the train step: each worker's gradients are scaled by its share of the
  global batch and summed over workers, so the update uses exactly the global-batch mean
  gradient. Uncompressed gradients travel in buckets (``bucket_cap_mb``, last layers first)
  whose non-blocking allreduce overlaps the rest of the backward pass (in MPI shared memory,
  summed where they lie, with ``algorithm="zero_copy"`` or ``"auto"``); compressed ones go
  through ``hiapi.distribute.compression``;
- data sharding: every worker draws the same global permutation each epoch and takes its part
  of each global batch (a final global batch too small to give every worker a sample is
  dropped), so all workers run the same number of steps and none waits forever;
- at the start of ``fit``: a check that every worker built the same model (shapes and dtypes),
  then rank 0's weights, optimizer state and batch-order seed broadcast to all;
- losses and metrics summed over workers before they are logged, so every rank reports the
  same numbers; only rank 0 prints and writes checkpoints;
- an exception on any rank prints that rank's traceback and aborts the whole job (non-zero
  exit) instead of leaving the others blocked in a collective.

``shard_optimizer_state=True`` keeps each parameter's summed gradient and optimizer slots on
one owner rank only (ZeRO stage 2, ``hiapi.distribute.sharding``).
"""
from __future__ import annotations

import sys
import traceback
import zlib
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

import numpy as np

from hiapi.hints import InputData
from hiapi.models import data
from hiapi import random as _random
from hiapi.runtime import state_writes
from hiapi.backends import get_backend
from hiapi.graph import Variable, ops, placeholder
from hiapi.distribute import compression as compression_module
from hiapi.distribute.abort import record_failure
from hiapi.distribute import exchange
from hiapi.distribute.communicator import world
from hiapi.distribute.compressed_ops import compressed_buckets, split_buckets
from hiapi.distribute.data_agreement import agree_batch, agree_counts
from hiapi.distribute.nccl import for_backend
from hiapi.distribute.ops import (AllreduceStart, AllreduceWait, Bucket, CompressedAllreduce,
                                  SharedAllreduceStart, SharedAllreduceWait, SharedBucket,
                                  register_kernels)
from hiapi.distribute import random_streams, sharding
from hiapi.models.strategy_scope import strategy_scope

if TYPE_CHECKING:
    from hiapi.distribute.communicator import Communicator
    from hiapi.distribute.compression import Compressor
    from hiapi.models import Model


class CommunicationStats:
    """Bytes this worker sent for gradients, against what dense float gradients would be."""

    def __init__(self):
        self.sent = self.dense = self.steps = 0
        self.shared_buckets = 0          # buckets allocated in shared memory (zero_copy's)
        self.shared_buckets_freed = 0    # of those (and other shared arrays), freed since

    def record(self, sent, dense):
        self.sent += sent
        self.dense += dense

    @property
    def bytes_per_step(self):
        return self.sent / max(self.steps, 1)

    @property
    def compression_ratio(self):
        return self.dense / self.sent if self.sent else float("nan")


# Strategy's arguments that choose a subclass, first match wins (a pipeline x tensor grid is a
# PipelineStrategy); the subclasses register under them (``class X(Strategy, chosen_by=...)``),
# so this module, which they extend, imports none of them.
SPLITS = ("pipeline_stages", "tensor_parallel")
_split_classes: dict[str, type] = {}


class Strategy:
    def __init_subclass__(cls, chosen_by: str | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if chosen_by is not None:
            if chosen_by not in SPLITS:
                raise ValueError(f"{cls.__name__}: chosen_by must be one of {SPLITS}, got "
                                 f"{chosen_by!r}")
            _split_classes[chosen_by] = cls

    def __new__(cls, *args, **kwargs):
        """``Strategy(pipeline_stages=K, ...)`` is a ``PipelineStrategy`` and
        ``Strategy(tensor_parallel=T)`` a ``TensorParallelStrategy``: one name for every way
        of splitting training, as in the user's script."""
        if cls is Strategy:
            cls = next((_split_classes[name] for name in SPLITS
                        if kwargs.get(name, 1) != 1 and name in _split_classes), cls)
        return super().__new__(cls)

    def __init__(self, compression: str | Compressor | None = "none", bucket_cap_mb: float = 25,
                 algorithm: str = "native", communicator: Communicator | None = None,
                 shard_optimizer_state: bool = False, overlap: bool = True,
                 sparse_exchange: str = "auto", pipeline_stages: int = 1,
                 tensor_parallel: int = 1, **compression_options: Any) -> None:
        # NCCL in place of MPI's collectives when the backend keeps arrays on the GPU
        self.communicator = communicator or for_backend(world(algorithm), get_backend().name)
        self.rank, self.size = self.communicator.rank, self.communicator.size
        self.compressor = compression_module.get(compression, **compression_options)
        if get_backend().name == "cupy" and not self.compressor.dense:
            raise NotImplementedError(
                f"Strategy(compression={compression!r}): gradient compression runs on the host "
                f"with numpy and is not supported on the cupy backend; use compression='none' "
                f"(NCCL allreduce) or a CPU backend")
        if hasattr(self.compressor, "reseed"):
            self.compressor.reseed(self.rank)
        self.compressor.workers = self.size
        self.bucket_cap_bytes = int(bucket_cap_mb * 2**20)
        # compressed buckets overlapping backward (compressed_ops.py), or per tensor, blocking
        self.overlap = overlap
        self.exchange = None if self.compressor.dense else \
            exchange.make(sparse_exchange, self.communicator, self.compressor)
        self.stats = CommunicationStats()
        self._scale = placeholder((), "float32", name="gradient_scale")
        self._epoch, self._batch = None, 0          # where training is, for set_progress
        self._streams_pending = None
        # ZeRO stage 2: each rank keeps the gradients and slots of its share of the parameters
        self.sharding = sharding.OptimizerSharding(self.communicator) if shard_optimizer_state else None
        if self.sharding:
            self.sharding.check(self, get_backend().name)

    @property
    def is_chief(self) -> bool:
        return self.rank == 0

    serves = False              # every rank trains (ParameterServerStrategy's servers do not)

    @property
    def evaluation_plan(self):
        """Evaluation is sharded like training and its totals summed over workers."""
        return self

    def end(self, model: Model) -> None:
        """After the last step of ``fit``: every rank already holds the same weights."""

    def scope(self) -> AbstractContextManager[Strategy]:
        """``with strategy.scope():`` around ``compile`` makes the model train with it."""
        return strategy_scope(self)

    def explain(self, model: Model, x: InputData, y: InputData, batch_size: int = 32,
                **options: Any) -> dict[str, Any]:
        """Measure alpha, beta and the model's compute per step, print the predicted step time
        per algorithm, bucket size, compression and worker count with the fraction of
        communication hidden behind the backward pass, and recommend one; returns the numbers
        as a dict. Collective: call it on every rank (``hiapi.distribute.explain``)."""
        from hiapi.distribute.explain import explain
        return explain(self, model, x, y, batch_size, **options)

    def scale_lr(self, learning_rate: float, base_batch: int = 256,
                 per_worker_batch: int | None = None) -> float:
        """Linear scaling rule (Goyal et al. 2017) for the global batch of all workers:
        ``lr * per_worker_batch * workers / base_batch``; ``per_worker_batch`` defaults to
        ``base_batch`` (so the rate scales with the number of workers)."""
        global_batch = (per_worker_batch or base_batch) * self.size
        return learning_rate * global_batch / base_batch

    # ---- data ----------------------------------------------------------------------------
    def batches(self, n, batch_size, shuffle, rng):
        return data.worker_batches(n, batch_size, self.size, self.rank, shuffle, rng)

    def agree(self, what, **counts):
        """Every rank holds the same data (see ``data_agreement``), or all raise."""
        agree_counts(self.communicator, what, counts)

    def agree_batch(self, local_n, has_batch, step, what):
        return agree_batch(self.communicator, local_n, has_batch, step, what)

    def global_batch(self, local_n):
        """Every rank holds ``local_n`` samples of its own (``train_on_batch``)."""
        return local_n * self.size

    def step_inputs(self):
        return [self._scale]

    def step_values(self, local_n, global_n):
        if self.sharding is not None:             # a checkpoint's gathered state: no longer
            self.sharding.release()
        if self._streams_pending is not None:     # first step of fit: after any restore
            random_streams.offset_for_rank(self._streams_pending, self.rank)
            self._streams_pending = None
        self.stats.steps += 1
        self._batch += 1
        self.communicator.set_progress(          # named in a collective-stall report
            f"train step {self.stats.steps}" if self._epoch is None else
            f"epoch {self._epoch + 1}, batch {self._batch} (train step {self.stats.steps})")
        return [local_n / global_n]

    # ---- the graph rewrite -----------------------------------------------------------------
    def reduce_gradients(self, gradients, variables, optimizer):
        register_kernels(get_backend())
        if self.sharding:
            sharding.register_kernels(get_backend())
            return self.sharding.reduce_to_owners(gradients, variables, self._scale,
                                                  self.stats, self.bucket_cap_bytes)
        self._take_over_momentum(optimizer)
        pairs = [(g, v) for g, v in zip(gradients, variables) if g is not None]
        reduced = self._bucketed(pairs) if self.compressor.dense else self._compressed(pairs)
        lookup = {id(v): r for (_, v), r in zip(pairs, reduced)}
        return [lookup.get(id(v)) for v in variables]

    def get_updates(self, optimizer, gradients, variables):
        if hasattr(optimizer, "agree_on_total"):    # a LossScaleOptimizer: skip steps together
            optimizer.agree_on_total = self._summed_over_workers
        if self.sharding:
            return self.sharding.get_updates(optimizer, gradients, variables)
        return optimizer.get_updates(gradients, variables)

    def _summed_over_workers(self, value):
        """A float32 scalar summed over the workers (an allreduce of 4 bytes per step): the
        loss-scale optimizer's finite check. Summed gradients already agree, but a rank of
        ``shard_optimizer_state`` sees only its own parameters' gradients, and one rank's
        overflow must make every rank skip the step and halve its scale."""
        bucket = Bucket(self.communicator, [1], self.stats)
        one = ops.constant(np.ones((), value.dtype))
        return ops.reshape(AllreduceWait(bucket)(AllreduceStart(bucket)(one, value)), ())

    def _bucketed(self, pairs):
        # the buckets of steps no longer held (a recompiled model's) go before new ones come:
        # every rank builds the same steps in the same order, so all reach this point together
        self.stats.shared_buckets_freed += self.communicator.release_shared()
        reduced = {}
        for members in split_buckets(pairs, self.bucket_cap_bytes):
            sizes = [int(np.prod(v.shape)) for _, v in members]
            dtype = members[0][0].dtype
            scale = ops.cast(self._scale, dtype)
            # in shared memory where the allreduce sums it in place (zero_copy, or auto)
            shared = self.communicator.shared_array(sum(sizes), dtype)
            if shared is None:
                bucket, start, wait = Bucket(self.communicator, sizes, self.stats), \
                    AllreduceStart, AllreduceWait
            else:
                bucket, start, wait = SharedBucket(self.communicator, sizes, self.stats,
                                                   shared), SharedAllreduceStart, \
                    SharedAllreduceWait
                self.stats.shared_buckets += 1
            flat = wait(bucket)(start(bucket)(scale, *[g for g, _ in members]))
            offset = 0
            for (gradient, variable), n in zip(members, sizes):
                part = ops.slice_axis(flat, 0, offset, offset + n)
                reduced[id(variable)] = ops.reshape(part, variable.shape)
                offset += n
        return [reduced[id(v)] for _, v in pairs]

    def _compressed(self, pairs):
        if self.overlap:
            return compressed_buckets(pairs, self._scale, self.compressor, self.exchange,
                                      self.stats, self.bucket_cap_bytes)
        slots = self.compressor.state_slots
        out = []
        for gradient, variable in pairs:
            state = [Variable(np.zeros(variable.shape, variable.dtype),
                              name=f"{variable.name}/{self.compressor.name}_{slot}",
                              trainable=False) for slot in slots]
            op = CompressedAllreduce(self.communicator, self.compressor, slots, self.stats)
            out.append(op(gradient, ops.cast(self._scale, gradient.dtype),
                          *[s.read for s in state]))
        return out

    def _take_over_momentum(self, optimizer):
        """DGC keeps the momentum (it must, to correct it); the optimizer then applies none."""
        if isinstance(self.compressor, compression_module.DGC):
            from hiapi.optimizers import SGD
            if self.compressor.momentum is None:
                self.compressor.momentum = optimizer.momentum if isinstance(optimizer, SGD) \
                    else 0.0
            if isinstance(optimizer, SGD):
                optimizer.momentum_applied_elsewhere = True

    # ---- fit integration -----------------------------------------------------------------
    def begin(self, model):
        self._check_same_model(model)
        self._start_from_rank_0(model, self.sharding.begin_variables(model) if self.sharding
                                else model.weights + model.state_variables +
                                model.optimizer.variables)
        self._streams_pending = model            # each rank its own dropout masks

    def _start_from_rank_0(self, model, variables):
        """Rank 0's values of ``variables`` and its batch-order seed, on every rank."""
        for variable in variables:
            self.communicator.bcast(variable.storage, root=0)
        state_writes.note()
        seed = np.array([_random.model_shuffle_seed(model)], np.int64)
        model._shuffle_seed = int(self.communicator.bcast(seed, root=0)[0])

    def _check_same_model(self, model):
        signature = ";".join(f"{v.shape}:{v.dtype}" for v in model.weights)
        mine = np.array([zlib.crc32(signature.encode()), len(model.weights)], np.int64)
        everyone, _ = self.communicator.allgather(mine)
        everyone = everyone.reshape(-1, 2)
        differing = [r for r in range(self.size) if not np.array_equal(everyone[r], everyone[0])]
        if differing:
            raise ValueError(f"distributed fit: rank(s) {differing} built a different model "
                             f"than rank 0 (parameter shapes/dtypes differ; rank {self.rank} "
                             f"has {len(model.weights)} weights: {signature[:200]})")

    def consolidate(self, model: Model) -> None:
        """With ``shard_optimizer_state=True``: gather the optimizer state onto rank 0 so
        ``model.save`` there writes all of it. Collective: call it on every rank. Checkpoint
        callbacks and the end of ``fit`` call it; without sharding it does nothing."""
        if self.sharding and getattr(model, "optimizer", None) is not None:
            self.sharding.consolidate(model.optimizer)

    def gather_totals(self, vector):
        """Every rank's running totals (a collective: every rank backs up at the same step)."""
        if self.size == 1:
            return [vector]
        gathered, sizes = self.communicator.allgather(vector)
        return np.split(gathered, np.cumsum(sizes)[:-1])

    def reduce_totals(self, compiled):
        vector = compiled.totals_vector()
        compiled.load_totals(self.communicator.allreduce(vector))

    def on_epoch_begin(self, epoch):
        self._epoch, self._batch = epoch, 0
        self.compressor.on_epoch_begin(epoch)

    def guard(self, fn, *args, **kwargs):
        """Run ``fn``; an exception on this rank ends the whole job with its traceback."""
        try:
            return fn(*args, **kwargs)
        except BaseException:
            if self.size == 1:
                raise
            position = _fit_position(sys.exc_info()[2])     # hiapi.run compares it
            where = f" at {position}" if position else ""
            record_failure(self.rank, position, traceback.format_exc())
            sys.stderr.write(f"[hiapi rank {self.rank}/{self.size}] fit failed{where}; aborting "
                             f"the job:\n{traceback.format_exc()}")
            sys.stderr.flush()
            self.communicator.abort(1)
            raise


def _fit_position(trace):
    """``"epoch E, batch B"``: where ``fit`` was when it failed (B counted from the epoch's
    start, also in an epoch resumed from a backup), read from the trainer's frames in the
    traceback (the innermost that knows the epoch): nothing is recorded per step for it."""
    for frame, _ in reversed(list(traceback.walk_tb(trace))):
        names = frame.f_locals
        if frame.f_code.co_name in ("_train_epoch", "_fit") and "epoch" in names:
            step = names.get("step")
            return f"epoch {names['epoch'] + 1}" + ("" if step is None else
                                                     f", batch {step + 1}")
    return None


class MPIStrategy(Strategy):
    """The MPI strategy, named explicitly (``Strategy`` picks it on the numpy backend)."""
