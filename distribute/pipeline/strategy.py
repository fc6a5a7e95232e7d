"""``Strategy(pipeline_stages=K, micro_batches=M, schedule="gpipe"|"1f1b")``: a model's chain of
layers (Sequential, or functional in one chain) cut into K stages, one per rank, trained with
micro-batches (the seed notes on pipeline parallelism; GPipe, Huang et al. 2019;
PipeDream-Flush's 1F1B, Narayanan et al. 2021).

    strategy = hiapi.distribute.Strategy(pipeline_stages=4, micro_batches=8)
    with strategy.scope():
        model = make_model()
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    model.fit(x, y, batch_size=256, epochs=5)     # mpiexec -n 4 python train.py

What it does:

- the stage boundaries are chosen to balance estimated cost (``split.py``) while every
  stage's planned memory fits ``compile(memory_budget=...)`` (``memory_split.py``), or named
  with ``pipeline_split=[first layer of stage 1, ...]``; ``strategy.explain()`` prints them,
  each stage's planned memory, and the bubble and imbalance (``stats.py``);
- each rank compiles its stage's programs only (``stage.py``): its memory plan covers its own
  layers, and its optimizer keeps the slots of its own parameters;
- each global batch is split into M micro-batches run in the chosen schedule (``train_step.py``),
  with one optimizer update per global batch, so training equals one process on the same batch
  (batch normalisation and random layers work per micro-batch, as in GPipe);
- at the end of each epoch's training (before validation and the epoch's callbacks) and of
  ``fit``, every stage broadcasts its weights, so ``evaluate``, ``predict``, ``get_weights`` and
  saving see the trained model on every rank; saving gathers the optimizer state onto rank 0
  (as with sharded state, ``hiapi.distribute.sharding``), so the file equals a single-process
  one and resuming hands each stage its own slots. Evaluation runs the whole model on every rank.

Run without ``mpiexec``, the same script trains in one process, with the micro-batches.
``mpiexec -n D*K*T`` with ``tensor_parallel=T`` splits each stage's layers over T ranks too
(``hiapi.distribute.tensor_parallel``'s rewrite, applied to the stage's graphs) and runs D
data-parallel replicas of the whole; saving gathers its optimizer state too (``grid_state.py``).
Functional models pipeline too when their layers form one chain (``chain.py``); others fail
with what is unsupported.
"""
import warnings

import numpy as np

from hiapi.backends import get_backend
from hiapi.distribute import sharding
from hiapi.distribute.communicator import LocalCommunicator, MPICommunicator
from hiapi.distribute.pipeline import schedules, split
from hiapi.distribute.pipeline.chain import chain_layers
from hiapi.distribute.pipeline.grid_state import GridOptimizerState
from hiapi.distribute.pipeline.memory_split import (StageMemoryPlanner, check_fits,
                                                    memory_aware_split)
from hiapi.distribute.pipeline.stage import StagePrograms
from hiapi.distribute.pipeline.stats import PipelineStats
from hiapi.distribute.pipeline.train_step import PipelineTrainStep
from hiapi.distribute.strategy import Strategy
from hiapi.distribute.tensor_parallel import ops as tp_ops
from hiapi.distribute.tensor_parallel.rewrite import TensorParallelRewrite
from hiapi.distribute.tensor_parallel.strategy import join, own_slice, split_layers
from hiapi.models import data, steps
from hiapi.models.distribution import LOCAL
from hiapi.runtime import state_writes


class StageOwnership(sharding.OptimizerSharding):
    """Optimizer state owned by stage: each parameter's slots live on its stage's rank."""

    def __init__(self, communicator, stage_of):
        super().__init__(communicator)
        self.stage_of = stage_of

    def owners(self, variables):
        return [self.stage_of[id(v)] for v in variables]


class PipelineStrategy(Strategy, chosen_by="pipeline_stages"):
    def __init__(self, pipeline_stages=2, micro_batches=None, schedule="1f1b",
                 pipeline_split=None, tensor_parallel=1, communicator=None,
                 algorithm="native"):
        super().__init__(communicator=communicator, algorithm=algorithm)
        stages, parts = self._check_grid(pipeline_stages, tensor_parallel)
        self.schedule_name = schedule
        self.schedule = schedules.get(schedule)
        if self.size == 1:
            warnings.warn(f"Strategy(pipeline_stages={stages}) without mpiexec: all stages run "
                          f"in this one process (the micro-batches are kept)", UserWarning,
                          stacklevel=2)
        self.requested_stages = stages
        self._lay_out_grid(stages, parts)
        self._slice_pending = False
        self._replica_share = 1.0
        self.micro_batches = int(micro_batches) if micro_batches is not None else 4 * stages
        if self.micro_batches < 1:
            raise ValueError(f"Strategy: micro_batches must be a positive integer, got "
                             f"{micro_batches!r}")
        self.pipeline_split = list(pipeline_split) if pipeline_split is not None else None
        self.pipeline_stats = PipelineStats()
        self.stage, self.starts, self.costs, self.ownership = None, None, None, None
        self.memory_budget = None
        self._planner, self._bounds, self._stage_memory = None, None, None
        self._batch_size = None            # fit's, once it batches (``batches``)
        self.optimizer_state = None        # ownership, or the grid's (tensor slices too)
        self._model, self._stage_of = None, {}

    def _check_grid(self, pipeline_stages, tensor_parallel):
        """(stages, parts) checked against each other and this job's ranks."""
        stages = int(pipeline_stages)
        if stages != pipeline_stages or stages < 2:
            raise ValueError(f"Strategy: pipeline_stages must be an integer >= 2, got "
                             f"{pipeline_stages!r}")
        parts = int(tensor_parallel)
        if parts != tensor_parallel or parts < 1:
            raise ValueError(f"Strategy: tensor_parallel must be a positive integer, got "
                             f"{tensor_parallel!r}")
        if self.size > 1 and self.size % (stages * parts):
            grid = f"{stages}" if parts == 1 else f"{stages}*{parts}"
            raise ValueError(
                f"Strategy(pipeline_stages={stages}"
                + (f", tensor_parallel={parts}" if parts > 1 else "") +
                f") runs one stage (x tensor part) per rank, D copies of the pipeline side by "
                f"side: start it with mpiexec -n D*{grid} (this job has {self.size} ranks)")
        return stages, parts

    def _lay_out_grid(self, stages, parts):
        """This rank's place in the process grid, rank = (replica * K + stage) * T + part (a
        stage's T parts are neighbours, then a replica's K stages), and its communicators."""
        self.pipeline_stages = stages if self.size > 1 else 1
        self.tensor_parallel = parts if self.size > 1 else 1
        self.replicas = self.size // (self.pipeline_stages * self.tensor_parallel)
        self.part = self.rank % self.tensor_parallel
        self.stage_index = self.rank // self.tensor_parallel % self.pipeline_stages
        self.replica = self.rank // (self.tensor_parallel * self.pipeline_stages)
        self.pipeline_comm, self.data_communicator, self.tensor_communicator = _grid(
            self.communicator, self.stage_index, self.replica, self.part, self.pipeline_stages,
            self.tensor_parallel)
        self.rewrite = TensorParallelRewrite(self.tensor_communicator, self.tensor_parallel,
                                             self.part) if self.tensor_parallel > 1 else None

    # ---- the train step ----------------------------------------------------------------------
    def train_function(self, model, xs, ys, weighted=False):
        """This rank's stage of the train step (``Trainer._step`` asks the plan for it)."""
        if len(xs) != 1:
            raise NotImplementedError(f"Strategy(pipeline_stages=...): model {model.name!r} "
                                      f"has {len(xs)} inputs; a pipeline takes one")
        steps._loss_graph(model, xs, ys, weighted, training=False)   # metrics on every rank
        layers = chain_layers(model)
        if model.optimizer.global_clipnorm is not None:
            raise NotImplementedError(f"{model.optimizer.name}: global_clipnorm is not "
                                      f"supported with pipeline_stages (each stage sees only "
                                      f"its own gradients); use clipnorm or clipvalue")
        targets = (model._compiled_targets, ys, weighted)
        planner, bounds = self._split(model, layers, len(xs[0]), targets)
        a, b = bounds[self.stage_index], bounds[self.stage_index + 1]
        last = self.stage_index == self.pipeline_stages - 1
        tensor = None
        if self.rewrite is not None:
            tp_ops.register_kernels(get_backend())
            tensor = (self.rewrite, *split_layers(model))
        self.stage = StagePrograms(model, layers[a:b], self.stage_index, self.pipeline_stages,
                                   planner.specs[a], targets=targets if last else None,
                                   tensor=tensor)
        if planner.budget is not None:   # what the forward and the held activations leave
            self.stage.backward.recompute = planner.backward_budget(
                self.stage_index, a, b, planner.memory(self.stage_index, a, b).forward)
        self._own_variables(model, layers, bounds)
        self.stage.build_update(model.optimizer)
        self.optimizer_state = self.ownership if self.rewrite is None else \
            GridOptimizerState(self, self.ownership)
        model.optimizer.sharded_by = self.optimizer_state
        self._model = model
        return PipelineTrainStep(self, self.stage, model._compiled_targets,
                                 (1, len(ys), len(ys) if weighted else 0), self.schedule)

    def _split(self, model, layers, arrays, targets):
        """The stages' first layers (``starts``), named or the fastest split that fits the
        memory budget, from the layers' costs per micro-batch; returns the memory planner and
        the stages' bounds."""
        spec = model.input_specs()[0]
        # fit builds the step from all its arrays; its batches (``batches``) say the size
        batch = min(arrays, self._batch_size or arrays)
        micro_batch = max(1, batch // self.micro_batches)   # weights amortise over it
        self.costs = split.layer_costs(layers, spec[0], spec[1], batch=micro_batch)
        planner = StageMemoryPlanner(model, layers, spec, self.pipeline_stages,
                                     -(-batch // self.micro_batches), self.schedule,
                                     self.micro_batches, targets)
        if self.pipeline_split is not None and self.pipeline_stages > 1:
            self.starts = split.split_from_names(layers, self.pipeline_split,
                                                 self.pipeline_stages)
            check_fits(planner, self.starts)
        else:
            self.starts = memory_aware_split(self.costs, planner)
        bounds = self.starts + [len(layers)]
        self._planner, self._bounds, self._stage_memory = planner, bounds, None
        self.memory_budget = planner.budget
        return planner, bounds

    def _own_variables(self, model, layers, bounds):
        """Each variable's owner, the world rank of its stage (replica 0, part 0)."""
        stage_of = {}
        for index in range(self.pipeline_stages):
            for layer in layers[bounds[index]:bounds[index + 1]]:
                for variable in layer.weights + layer.state_variables:
                    stage_of.setdefault(id(variable), index * self.tensor_parallel)
        self._stage_of = stage_of
        self.ownership = StageOwnership(self.communicator, stage_of)
        self.ownership._trained = list(model.trainable_weights)

    # ---- data: every stage sees the whole global batch ---------------------------------------
    def batches(self, n, batch_size, shuffle, rng):
        """Each pipeline replica takes its part of the global batch (``batch_size`` per
        replica), as data-parallel workers do; a replica's stages all see that part. The
        batch size is kept: the split is planned for its micro-batches (``train_function``)."""
        self._batch_size = batch_size
        return data.worker_batches(n, batch_size, self.replicas, self.replica, shuffle, rng)

    def agree_batch(self, local_n, has_batch, step, what):
        return LOCAL.agree_batch(local_n, has_batch, step, what)

    def global_batch(self, local_n):
        """A replica's stages share its ``local_n`` samples (``train_on_batch``)."""
        return local_n * self.replicas

    def step_inputs(self):
        return []

    def step_values(self, local_n, global_n):
        if self.optimizer_state is not None:     # a checkpoint's gathered state: no longer
            self.optimizer_state.release()
        if self._slice_pending:              # first step of fit, after any restore
            for whole, local, axis in self.rewrite.slices.values():
                local.assign(own_slice(whole.numpy(), self.tensor_parallel, self.part, axis))
            self._slice_pending = False
        self.stats.steps += 1
        self._replica_share = local_n / global_n
        return []

    @property
    def evaluation_plan(self):
        """Evaluation runs the whole (synchronised) model on every rank."""
        return LOCAL

    # ---- weights and state between the stages ------------------------------------------------
    def begin(self, model):
        """Rank 0's weights, layer state, step count and seed everywhere (not the optimizer's
        slots: each rank holds its own part of them)."""
        self._check_same_model(model)
        self._start_from_rank_0(model, model.weights + model.state_variables +
                                [model.optimizer.iterations])
        self._slice_pending = self.rewrite is not None

    def _share_weights(self, model):
        """Every stage's weights and layer state, from its rank to all."""
        if self.size == 1 or self.stage is None:
            return
        if self.rewrite is not None:       # a stage's whole weights from its parts' slices
            for whole, local, axis in self.rewrite.slices.values():
                whole.assign(join(self.tensor_communicator, self.tensor_parallel,
                                  local.numpy(), whole.shape, axis))
        for variable in model.weights + model.state_variables:
            owner = self._stage_of.get(id(variable))
            if owner is not None:
                self.communicator.bcast(variable.storage, root=owner)
        state_writes.note()

    def reduce_totals(self, compiled):
        """End of an epoch's training: the totals already agree (the last stage broadcast
        every step's results); the weights are shared so validation and callbacks see them."""
        if self.replicas > 1:
            compiled.load_totals(self.data_communicator.allreduce(compiled.totals_vector()))
        self._share_weights(self._model)

    def consolidate(self, model):
        self._share_weights(model)
        if self.optimizer_state is not None and model.optimizer.built:
            self.optimizer_state.consolidate(model.optimizer)

    # ---- explain -----------------------------------------------------------------------------
    @property
    def stage_memory(self):
        """Every stage's ``StageMemory`` (planned bytes). Without a budget only ``explain``
        asks, so each rank plans the other stages' graphs then, not while building its step
        (with one they were planned to choose the split, and are cached)."""
        if self._stage_memory is None and self._planner is not None:
            bounds = self._bounds
            self._stage_memory = [self._planner.memory(k, a, b)
                                  for k, (a, b) in enumerate(zip(bounds, bounds[1:]))]
        return self._stage_memory

    def explain(self, model=None, print_fn=print):
        """The split, each stage's estimated cost and planned memory, and the idle time:
        (K-1)/(M+K-1), predicted for this schedule and these stages' estimated costs
        (``schedules.predicted_bubble``) and, after training steps, measured. Both are split as
        ``stats.py`` explains: the *bubble* (the bottleneck stage's idle fraction, the
        pipeline's fill and drain) and each stage's *imbalance* (its idle time beyond that,
        waiting for a slower stage); a stage's idle fraction is their sum."""
        if self.starts is None:
            raise RuntimeError("strategy.explain(): the split is chosen when fit builds the "
                               "train step; call it after fit (or a train_on_batch)")
        report, stage_costs = self._report()
        print_fn("\n".join(self._explain_lines(report, stage_costs)))
        return report

    def _report(self):
        """``explain``'s figures, and each stage's estimated cost per micro-batch."""
        K, M = self.pipeline_stages, self.micro_batches
        bounds = self.starts + [len(self.costs)]
        actions = split.stage_actions(self.costs, self.starts)
        stage_costs = [f + b for f, b in actions]
        predicted = schedules.predicted_bubble(K, M, self.schedule, actions)
        bubble, imbalance = schedules.bubble_and_imbalance(predicted)
        names = [layer.name for layer in chain_layers(self._model)]
        stats, measured = self.pipeline_stats, self.pipeline_stats.steps > 0
        report = {"stages": K, "replicas": self.replicas, "micro_batches": M,
                  "tensor_parallel": self.tensor_parallel,
                  "tensor_pairs_this_rank": self.stage.tensor_pairs,
                  "schedule": self.schedule_name,
                  "split": [names[a:b] for a, b in zip(bounds, bounds[1:])],
                  "stage_gflop_per_micro_batch": [c / 1e9 for c in stage_costs],   # roofline
                  "balance": max(stage_costs) / (sum(stage_costs) / K),
                  "ideal_bubble": schedules.ideal_bubble(K, M),
                  "predicted_bubble": bubble,
                  "predicted_imbalance": float(np.mean(imbalance)),
                  "predicted_idle_per_stage": predicted,
                  "measured_seconds_per_micro_batch_this_rank": stats.action_seconds,
                  "measured_cpu_seconds_per_micro_batch_this_rank": stats.action_cpu_seconds,
                  "waiting_this_rank": stats.waiting,
                  "activations_held": schedules.peak_in_flight(
                      self.schedule(self.stage_index, K, M)),
                  "measured_bubble": stats.bubble if measured else None,
                  "measured_imbalance_per_stage": stats.imbalance_per_stage,
                  "measured_imbalance": float(np.mean(stats.imbalance_per_stage))
                  if measured else None,
                  "measured_bottleneck_stage": stats.bottleneck,
                  "measured_idle_this_rank": stats.idle if measured else None,
                  "measured_steady_receive_wait_seconds_this_rank": stats.steady_receive_wait,
                  "peak_held_activation_bytes_this_rank": stats.peak_held_bytes,
                  "memory_budget": self.memory_budget,
                  "planned_stage_bytes": [
                      {"forward": m.forward, "backward": m.backward, "held": m.held,
                       "total": m.total} for m in self.stage_memory],
                  "planned_arena_bytes_this_rank": _arena_bytes(self.stage)}
        return report, stage_costs

    def _explain_lines(self, report, stage_costs):
        """``explain``'s text: one line for the run, one per stage, the balance and bubble."""
        K, M, stats = report["stages"], report["micro_batches"], self.pipeline_stats
        bubble, measured = report["predicted_bubble"], stats.steps > 0
        lines = [f"Pipeline: {K} stages x {M} micro-batches, schedule {self.schedule_name!r}"
                 + (f", {self.tensor_parallel}-way tensor parallel" if self.tensor_parallel > 1
                    else "")
                 + (f", {self.replicas} data-parallel replicas" if self.replicas > 1 else "")]
        for k, (layers, cost, memory) in enumerate(zip(report["split"], stage_costs,
                                                       self.stage_memory)):
            lines.append(f"  stage {k}: {len(layers)} layers ({layers[0]} .. {layers[-1]}), "
                         f"{cost / 1e6:.2f} MFLOP-equivalent per micro-batch, planned "
                         f"{_mib(memory.total)} (forward {_mib(memory.forward)}, backward "
                         f"{_mib(memory.backward)}, held activations {_mib(memory.held)})")
        if self.memory_budget is not None:
            lines.append(f"  memory_budget per process: {_mib(self.memory_budget)}")
        lines.append(f"  slowest stage / mean: {report['balance']:.2f}; predicted bubble "
                     f"{bubble:.3f} and imbalance {report['predicted_imbalance']:.3f} "
                     f"(mean over stages; {self.schedule_name} with these stages; "
                     f"(K-1)/(M+K-1) = {report['ideal_bubble']:.3f})")
        if measured:
            per_stage = ", ".join(f"{x:.3f}" for x in report["measured_imbalance_per_stage"])
            lines.append(f"  measured: bubble {report['measured_bubble']:.3f} (idle of stage "
                         f"{stats.bottleneck}, the busiest), imbalance per stage [{per_stage}]; "
                         f"rank {self.rank} idle {report['measured_idle_this_rank']:.3f}, at "
                         f"most {report['activations_held']} micro-batches of activations held")
        return lines


def _grid(communicator, stage, replica, part, stages, parts):
    """The communicators of the grid: this replica's pipeline for this part (point to point
    between stages, an mpi4py communicator), this stage-and-part's data-parallel group
    (gradient allreduce) and this stage's tensor group."""
    if communicator.size == 1:
        return None, LocalCommunicator(), LocalCommunicator()
    pipeline = communicator.comm.Split(replica * parts + part, stage)
    data = communicator.comm.Split(stage * parts + part, replica)
    tensor = communicator.comm.Split(replica * stages + stage, part)

    def wrap(comm):
        return MPICommunicator(comm) if comm.Get_size() > 1 else LocalCommunicator()
    return pipeline, wrap(data), wrap(tensor)


def _mib(nbytes):
    return f"{nbytes / 2**20:.2f} MiB"


def _arena_bytes(stage):
    if stage is None:
        return None
    sizes = [e.plan.arena_bytes for e in stage.backward._executables.values()
             if e.plan is not None]
    return max(sizes) if sizes else None
