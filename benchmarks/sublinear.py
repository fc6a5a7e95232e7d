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
  system and glibc's caching does not blur it;
- step time: both modes in one process, one step of each in turn (``--rounds`` times), so the
  machine's load falls on both alike; the medians and their ratio.
"""
import argparse
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
    """Median step seconds of default and sublinear, one step of each in turn."""
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
    return {mode: float(np.median(t)) for mode, t in times.items()}, times


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--backends", default="numpy,numba")
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
        rows = {}
        for mode in ("default", "sublinear"):
            out = subprocess.run([sys.executable, __file__, "--child", mode, "--batch",
                                  str(args.batch), "--steps", str(args.steps)],
                                 capture_output=True, text=True, env=env, check=True)
            rows[mode] = json.loads(out.stdout.strip().splitlines()[-1])
        out = subprocess.run([sys.executable, __file__, "--times", "--batch", str(args.batch),
                              "--rounds", str(args.rounds)], capture_output=True, text=True,
                             check=True, env=env)
        medians = json.loads(out.stdout.strip().splitlines()[-1])
        for mode, row in rows.items():
            row.update(backend=backend, batch=args.batch, step_seconds_median=medians[mode])
            print(json.dumps(row), flush=True)
        base, sub = rows["default"], rows["sublinear"]
        print(json.dumps({
            "backend": backend, "batch": args.batch,
            "planned_activations_default_over_sublinear": round(
                base["planned_activation_bytes"] / sub["planned_activation_bytes"], 2),
            "planned_arena_default_over_sublinear": round(
                base["planned_arena_bytes"] / sub["planned_arena_bytes"], 2),
            "rss_growth_default_over_sublinear": round(
                base["rss_growth_bytes"] / max(sub["rss_growth_bytes"], 1), 2),
            "step_time_sublinear_over_default": round(
                medians["sublinear"] / medians["default"], 3)}), flush=True)


if __name__ == "__main__":
    main()
