"""Pipeline parallelism, measured under a real ``mpiexec``: the bubble against (K-1)/(M+K-1),
the activations GPipe and 1F1B hold per stage, and a model whose memory plan does not fit a
per-process ``memory_budget`` on one process but trains on 4 stages.

    python benchmarks/pipeline.py [--stages 2] [--steps 8] [--skip-budget] [--bubble-only]
                                  [--split LAYER ...] [--micro-batches 1 2 4 8 16]

1. Bubble: an MLP of equal Dense(512) layers and a Dense(10) head, global batch 4096, for
   M = 1, 2, 4, 8, 16 micro-batches. The depth is one the stages can balance as they run
   (``split.stage_actions``: a stage but the last re-runs its forward in its backward, the
   first computes no gradient for its input): 9 layers split 4 | 5 for 2 stages (4 + 4 + 4 + 3
   = 15 matmuls per micro-batch against 5 * 3), 13 split 3 | 3 | 3 | 4 for 4 (11, 12, 12, 12).
   ``--split dense_3`` (or ``dense_5``) measures the 2-stage run with the boundary a layer
   earlier (later), what re-splitting by measured stage times could do at this granularity.
   The micro-batches at M = 16 have 256 rows, enough for the weight-gradient matmuls to run as
   fast as the others (with 64-row micro-batches of a 1024-wide MLP they ran ~15% slower, and
   the stage with more of them was ~4% slower: an imbalance the split cannot see). Each
   rank measures the idle fraction of its steps (time blocked waiting for a neighbour's
   activation or gradient, for its own sends to be taken, or in the step's closing collective,
   over wall time, after a warm-up step), over all steps and the median step (a neighbour's
   load on a shared machine lands in a few steps), and splits it as ``stats.py`` does: the
   *bubble*, the idle fraction of the bottleneck stage (the one busy longest), which is what
   (K-1)/(M+K-1) predicts, and each stage's *imbalance*, its idle time beyond that (waiting
   each micro-batch for the slower stage). Printed: the bubble and the mean idle over ranks
   (= bubble + mean imbalance), each against (K-1)/(M+K-1); the imbalance per stage; and the
   (bubble, mean imbalance) of the schedule simulated with the estimated stage costs and with
   the stage times measured in the same run (what is left is communication and the ranks
   slowing each other down). Run it with one rank per free core:
   a rank that waits for the CPU looks like a bubble. With more ranks than cores
   (``--stages 4`` on 2 cores) the stages wait by yielding the core (``waiting.py``) and the
   measured bubble is that of an oversubscribed run; ``predicted_from_stage_cpu_times``
   simulates the schedule with the stages' CPU time per action, what a core each would give.
2. Memory: the bytes of entering activations each stage holds between forward and backward,
   GPipe against 1F1B, K stages, M = 8 (GPipe holds M micro-batches, 1F1B at most K - k).
3. Budget: a 24 x Dense(1024) MLP, batch 1024, compiled with ``memory_budget`` below what one
   process can plan even with recomputation (the error is printed), then trained on 4 stages
   under the same per-process budget (each stage plans only its own layers; the split keeps
   every stage's planned forward + backward + held activations under it, ``memory_split.py``).
"""
import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "HIAPI_NUM_THREADS": "1",
       "PYTHONUNBUFFERED": "1"}
BUDGET = 48 * 2**20
BALANCED_DEPTH = {2: 9, 4: 13}      # Dense layers that K stages split evenly (see above)


def mlp(depth, width):
    import hiapi
    from hiapi import layers
    hiapi.utils.set_random_seed(0)
    return hiapi.Sequential([hiapi.Input(shape=(width,))] +
                            [layers.Dense(width, activation="relu") for _ in range(depth)] +
                            [layers.Dense(10)])


def worker(schedule, micro_batches, steps, budget):
    import hiapi
    stages = int(os.environ["STAGES"])
    named = os.environ.get("PIPELINE_SPLIT")        # --split: the bubble runs' boundaries
    strategy = hiapi.distribute.Strategy(pipeline_stages=stages, micro_batches=micro_batches,
                                         schedule=schedule, pipeline_split=named.split(",")
                                         if named and not budget else None)
    depth, width, batch = (24, 1024, 1024) if budget else (BALANCED_DEPTH.get(stages, 9), 512,
                                                           4096)
    with strategy.scope():
        model = mlp(depth, width)
        model.compile(optimizer=hiapi.optimizers.SGD(0.01),
                      loss=hiapi.losses.SparseCategoricalCrossentropy(from_logits=True),
                      memory_budget=BUDGET if budget else None)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(batch * steps, width)).astype("float32")
    y = rng.integers(0, 10, len(x))
    model.fit(x[:batch], y[:batch], batch_size=batch, epochs=1, verbose=0)      # compile
    strategy.pipeline_stats.reset()
    model.fit(x, y, batch_size=batch, epochs=1, verbose=0)
    report = strategy.explain(print_fn=lambda text: None)
    stats = strategy.pipeline_stats
    record = {"rank": strategy.rank, "idle": report["measured_idle_this_rank"],
              "bubble": report["measured_bubble"],
              "imbalance": report["measured_imbalance_per_stage"],
              "median_step_idle": float(np.median(stats.step_idle)),
              "median_step_bubble": float(np.median(stats.step_bubble)),
              "bottleneck": report["measured_bottleneck_stage"],
              "steady_wait": report["measured_steady_receive_wait_seconds_this_rank"],
              "busy_per_step": stats.busy / stats.steps,
              "ideal": report["ideal_bubble"],
              "predicted": report["predicted_bubble"],
              "predicted_imbalance": report["predicted_imbalance"],
              "seconds_per_micro_batch": report["measured_seconds_per_micro_batch_this_rank"],
              "cpu_seconds_per_micro_batch":
              report["measured_cpu_seconds_per_micro_batch_this_rank"],
              "waiting": report["waiting_this_rank"],
              "held_bytes": report["peak_held_activation_bytes_this_rank"],
              "held_micro_batches": report["activations_held"],
              "arena_bytes": report["planned_arena_bytes_this_rank"],
              "planned_stage_bytes": report["planned_stage_bytes"],
              "split": report["split"]}
    everyone = strategy.communicator.comm.gather(record, root=0)
    if strategy.rank == 0:
        print("RESULT " + json.dumps(everyone), flush=True)


def from_measured_times(records, schedule, micro_batches, key="seconds_per_micro_batch"):
    """The schedule's (bubble, mean imbalance) simulated with each stage's measured forward
    and backward seconds (or CPU seconds) per micro-batch."""
    from hiapi.distribute.pipeline import schedules
    actions = [r[key] for r in records]
    bubble, imbalance = schedules.bubble_and_imbalance(schedules.predicted_bubble(
        len(records), micro_batches, schedules.get(schedule), actions))
    return bubble, float(np.mean(imbalance))


def run(stages, schedule, micro_batches, steps, budget=False, pipeline_split=()):
    command = [str(Path(sys.executable).parent / "mpiexec"), "-n", str(stages), sys.executable,
               __file__, "--worker", schedule, str(micro_batches), str(steps)] + \
        (["--budget"] if budget else [])
    result = subprocess.run(command, capture_output=True, text=True, timeout=900,
                            env={**os.environ, **ENV, "STAGES": str(stages),
                                 "PIPELINE_SPLIT": ",".join(pipeline_split)})
    for line in result.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise RuntimeError(f"{' '.join(command)} failed:\n{result.stdout[-2000:]}\n"
                       f"{result.stderr[-3000:]}")


def one_process_budget():
    """What one process says when asked to fit the big MLP into the budget."""
    import hiapi
    model = mlp(24, 1024)
    model.compile(optimizer=hiapi.optimizers.SGD(0.01),
                  loss=hiapi.losses.SparseCategoricalCrossentropy(from_logits=True),
                  memory_budget=BUDGET)
    x = np.zeros((1024, 1024), "float32")
    try:
        model.train_on_batch(x, np.zeros(1024, "int64"))
        return "fits (no error)"
    except Exception as error:          # the planner's MemoryError names the smallest budget
        return f"{type(error).__name__}: {str(error)[:300]}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stages", type=int, default=2)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--skip-budget", action="store_true")
    parser.add_argument("--bubble-only", action="store_true")
    parser.add_argument("--split", nargs="+", default=(), metavar="LAYER",
                        help="first layer of stages 1..K-1 for the bubble runs (pipeline_split), "
                             "to measure other boundaries than the balanced ones")
    parser.add_argument("--micro-batches", nargs="+", type=int, default=(1, 2, 4, 8, 16))
    parser.add_argument("--worker", nargs=3, metavar=("SCHEDULE", "M", "STEPS"))
    parser.add_argument("--budget", action="store_true")
    args = parser.parse_args()
    if args.worker:
        schedule, micro_batches, steps = args.worker
        return worker(schedule, int(micro_batches), int(steps), args.budget)
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    K = args.stages
    for M in args.micro_batches:
        records = run(K, "1f1b", M, args.steps, pipeline_split=args.split)
        ideal = records[0]["ideal"]
        bubble = float(np.mean([r["bubble"] for r in records]))      # the same stage's idle
        median_bubble = float(np.mean([r["median_step_bubble"] for r in records]))
        idle = float(np.mean([r["idle"] for r in records]))
        median_idle = float(np.mean([r["median_step_idle"] for r in records]))
        imbalance = records[0]["imbalance"]
        simulated = from_measured_times(records, "1f1b", M)
        simulated_cpu = from_measured_times(records, "1f1b", M, "cpu_seconds_per_micro_batch")
        print(json.dumps({"benchmark": "bubble", "stages": K, "micro_batches": M,
                          "split": [len(layers) for layers in records[0]["split"]],
                          "ideal": round(ideal, 3),
                          "bubble": round(bubble, 3),
                          "bubble_ratio_to_ideal": round(bubble / ideal, 2),
                          "median_step_bubble_ratio_to_ideal": round(median_bubble / ideal, 2),
                          "imbalance_per_stage": [round(x, 3) for x in imbalance],
                          "imbalance_mean": round(float(np.mean(imbalance)), 3),
                          "idle_per_rank": [round(r["idle"], 3) for r in records],
                          "idle_mean": round(idle, 3),
                          "idle_ratio_to_ideal": round(idle / ideal, 2),
                          "median_step_idle_ratio_to_ideal": round(median_idle / ideal, 2),
                          "predicted_from_costs": [round(records[0]["predicted"], 3),
                                                   round(records[0]["predicted_imbalance"], 3)],
                          "predicted_from_measured_stage_times": [round(x, 3)
                                                                  for x in simulated],
                          "predicted_from_stage_cpu_times": [round(x, 3) for x in simulated_cpu],
                          "bottleneck_stage": records[0]["bottleneck"],
                          "bottleneck_steady_receive_wait_ms": None if records[
                              records[0]["bottleneck"]]["steady_wait"] is None else round(
                              1e3 * records[records[0]["bottleneck"]]["steady_wait"], 3),
                          "host_ms_per_micro_batch": [
                              round(1e3 * (r["busy_per_step"] / M -
                                           sum(r["seconds_per_micro_batch"])), 3)
                              for r in records],
                          "waiting": sorted({r["waiting"] for r in records}),
                          "ms_per_micro_batch_forward_backward": [
                              [round(1e3 * t, 2) for t in r["seconds_per_micro_batch"]]
                              for r in records],
                          "load_average": load}), flush=True)
    if args.bubble_only:
        return
    for schedule in ("gpipe", "1f1b"):
        records = run(K, schedule, 8, args.steps)
        print(json.dumps({"benchmark": "activations held", "stages": K, "micro_batches": 8,
                          "schedule": schedule,
                          "micro_batches_held_per_stage": [r["held_micro_batches"]
                                                           for r in records],
                          "held_mib_per_stage": [round(r["held_bytes"] / 2**20, 2)
                                                 for r in records]}), flush=True)
    if not args.skip_budget:
        print(json.dumps({"benchmark": "memory_budget", "budget_mib": BUDGET / 2**20,
                          "one_process": one_process_budget()}), flush=True)
        records = run(4, "1f1b", 4, 2, budget=True)
        print(json.dumps({"benchmark": "memory_budget", "budget_mib": BUDGET / 2**20,
                          "four_stages_arena_mib": [round(r["arena_bytes"] / 2**20, 1)
                                                    for r in records],
                          "four_stages_planned_total_mib": [
                              round(s["total"] / 2**20, 1)
                              for s in records[0]["planned_stage_bytes"]],
                          "split": [len(layers) for layers in records[0]["split"]],
                          "trained": True}), flush=True)


if __name__ == "__main__":
    main()
