"""Sublinear memory on the deep CNN (16 x Conv2D(64, 3x3, same) + ReLU on 64x64x3, batch 32,
then global average pooling and Dense(10)): default plan against ``memory="sublinear"``, on the
numpy and numba backends.

    python benchmarks/sublinear.py              # batch 32 (a few minutes on 2 cores)
    python benchmarks/sublinear.py --batch 8    # a quick check

Per backend it prints one JSON line per mode and one with the ratios:
- planned activation bytes: the arena's values, less those that outlive the step (new weights
  and outputs); the kernels' planned scratch apart, and the whole arena;
- RSS growth: the resident set after compile and a few steps minus before, measured in a child
  process of its own with ``MALLOC_MMAP_THRESHOLD_`` fixed, so freed blocks go back to the
  system and glibc's caching does not blur it; a copy of the model at batch 2 trains one step
  first, so imports and numba's compilation are not counted (as in
  ``tests/graph/test_memory_truth.py``);
- step time: both modes in one process, one step of each in turn (``--rounds`` times), so the
  machine's load falls on both alike; the medians, the fastest steps, and the median of each
  round's ratio (a burst of load from another process falls on one round's pair, not on one
  mode). ``--threads 1`` times with one thread per pool, which a shared machine's load
  disturbs least; the default is hiapi's thread budget.
"""
import argparse
import gc
import json
import os
import subprocess
import sys
import time

import numpy as np


def build(batch, memory, depth=16, size=64):
    import hiapi
    from hiapi import layers, losses
    hiapi.utils.set_random_seed(0)
    model = hiapi.Sequential(
        [hiapi.Input(shape=(size, size, 3))] +
        [layers.Conv2D(64, 3, padding="same", activation="relu") for _ in range(depth)] +
        [layers.GlobalAveragePooling2D(), layers.Dense(10)])
    model.compile(optimizer=hiapi.optimizers.SGD(0.01), memory=memory,
                  loss=losses.SparseCategoricalCrossentropy(from_logits=True))
    x = np.random.default_rng(0).normal(size=(batch, size, size, 3)).astype(np.float32)
    y = np.random.default_rng(1).integers(0, 10, batch)
    return model, x, y


def train_executable(model):
    step = [f for key, f in model._step_functions.items() if key[0] == "train"][0]
    return list(step._executables.values())[-1]


def activation_bytes(executable):
    """The arena's values (kernel scratch apart) less those that outlive the step (new
    weights, outputs)."""
    roots = {executable.order[i] for i in executable.output_slots} | \
        {executable.order[i] for _, i, _ in executable.update_slots}
    kept = sum(int(np.prod(executable.specs[v].shape)) * executable.specs[v].dtype.itemsize
               for v in roots if not v.op.is_source)
    return executable.plan.arena_bytes - executable.plan.scratch_bytes - kept


def resident_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def child(mode, batch, steps):
    """Compile and run a few steps in this process: RSS growth, planned bytes, recomputation."""
    from hiapi.graph.memory.cost import flops
    warm, wx, wy = build(2, None if mode == "default" else mode)
    warm.train_on_batch(wx, wy)                       # imports, numba's compilation
    del warm
    gc.collect()                  # freed now, not during the measured steps
    model, x, y = build(batch, None if mode == "default" else mode)
    before = resident_bytes()
    for _ in range(steps):
        model.train_on_batch(x, y)
    growth = resident_bytes() - before
    executable = train_executable(model)
    extra = sum(flops(v, executable.specs) for v in executable.order if v.recompute)
    return {"mode": mode, "planned_arena_bytes": executable.plan.arena_bytes,
            "planned_activation_bytes": activation_bytes(executable),
            "planned_scratch_bytes": executable.plan.scratch_bytes,
            "lower_bound_bytes": executable.plan.lower_bound, "rss_growth_bytes": growth,
            "recomputed_values": executable.recomputed_values,
            "recomputed_gflop": round(extra / 1e9, 3)}


def interleaved_step_times(batch, rounds):
    """Step seconds of default and sublinear, one step of each in turn: per mode the median
    and the fastest, and the median of the rounds' sublinear / default ratios."""
    models = {mode: build(batch, None if mode == "default" else mode)
              for mode in ("default", "sublinear")}
    for model, x, y in models.values():
        model.train_on_batch(x, y)                    # compile, first step
    times = {mode: [] for mode in models}
    for _ in range(rounds):
        for mode, (model, x, y) in models.items():
            start = time.perf_counter()
            model.train_on_batch(x, y)
            times[mode].append(time.perf_counter() - start)
    summary = {mode: float(np.median(t)) for mode, t in times.items()}
    summary.update({f"{mode}_min": float(min(t)) for mode, t in times.items()})
    summary["ratio_median"] = float(np.median(np.array(times["sublinear"]) /
                                              np.array(times["default"])))
    return summary, times


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--backends", default="numpy,numba")
    parser.add_argument("--threads", type=int, help="threads per pool for the timing "
                        "(HIAPI_NUM_THREADS; default: hiapi's thread budget)")
    parser.add_argument("--skip-memory", action="store_true", help="time only")
    parser.add_argument("--child", metavar="MODE", help="measure one mode's memory (internal)")
    parser.add_argument("--times", action="store_true", help="time both modes (internal)")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.batch, args.steps)))
        return
    if args.times:
        medians, _ = interleaved_step_times(args.batch, args.rounds)
        print(json.dumps(medians))
        return
    for backend in args.backends.split(","):
        env = {**os.environ, "HIAPI_BACKEND": backend, "MALLOC_MMAP_THRESHOLD_": str(1 << 16),
               "PYTHONUNBUFFERED": "1"}
        rows = {mode: {"mode": mode} for mode in ("default", "sublinear")}
        for mode in () if args.skip_memory else rows:
            out = subprocess.run([sys.executable, __file__, "--child", mode, "--batch",
                                  str(args.batch), "--steps", str(args.steps)],
                                 capture_output=True, text=True, env=env, check=True)
            rows[mode] = json.loads(out.stdout.strip().splitlines()[-1])
        timing_env = dict(env)
        del timing_env["MALLOC_MMAP_THRESHOLD_"]          # time with glibc's usual caching
        if args.threads:
            timing_env["HIAPI_NUM_THREADS"] = str(args.threads)
        out = subprocess.run([sys.executable, __file__, "--times", "--batch", str(args.batch),
                              "--rounds", str(args.rounds)], capture_output=True, text=True,
                             check=True, env=timing_env)
        medians = json.loads(out.stdout.strip().splitlines()[-1])
        for mode, row in rows.items():
            row.update(backend=backend, batch=args.batch, threads=args.threads or "budget",
                       step_seconds_median=medians[mode], step_seconds_min=medians[f"{mode}_min"])
            print(json.dumps(row), flush=True)
        base, sub = rows["default"], rows["sublinear"]
        ratios = {"backend": backend, "batch": args.batch, "threads": args.threads or "budget"}
        if not args.skip_memory:
            ratios.update({
                "planned_activations_default_over_sublinear": round(
                    base["planned_activation_bytes"] / sub["planned_activation_bytes"], 2),
                "planned_arena_default_over_sublinear": round(
                    base["planned_arena_bytes"] / sub["planned_arena_bytes"], 2),
                "rss_growth_default_over_sublinear": round(
                    base["rss_growth_bytes"] / max(sub["rss_growth_bytes"], 1), 2)})
        ratios.update({
            "step_time_sublinear_over_default": round(
                medians["sublinear"] / medians["default"], 3),
            "step_time_fastest_ratio": round(medians["sublinear_min"] / medians["default_min"], 3),
            "step_time_median_of_round_ratios": round(medians["ratio_median"], 3),
            "load_average": os.getloadavg()[0]})
        print(json.dumps(ratios), flush=True)


if __name__ == "__main__":
    main()
