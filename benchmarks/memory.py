"""Memory planning, measured: one training step of two activation-heavy models under
(a) no planning (every value its own buffer), (b) the static plan, (c) the plan with sublinear
recomputation; plus the compile-and-plan time of a 10,000-convolution chain.

    python benchmarks/memory.py                 # full size (a few minutes, ~10 GB peak)
    python benchmarks/memory.py --small         # a quick check

Each (model, mode) runs in its own process with MALLOC_MMAP_THRESHOLD_ fixed, so its peak RSS
is its own and glibc's caching does not blur it. Prints one JSON line per run: planned bytes,
measured bytes held by the executor's buffers (the arena, or the sum of separate buffers),
the lower and upper bounds, peak RSS, the growth of the resident set over compile and steps
against the planned arena (what ``memory_report()`` promises: memory outside the plan shows
here), median step time, and ratios against (b) of the same model.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np


def build(model, small):
    import hiapi
    from hiapi import layers
    hiapi.utils.set_random_seed(0)
    if model == "mlp":
        depth, width, batch = (8, 256, 512) if small else (64, 1024, 4096)
        stack = [hiapi.Input(shape=(width,))] + \
            [layers.Dense(width, activation="relu") for _ in range(depth)] + [layers.Dense(10)]
        x = np.random.default_rng(0).normal(size=(batch, width)).astype(np.float32)
    else:
        depth, size, batch = (4, 16, 8) if small else (16, 64, 32)
        stack = [hiapi.Input(shape=(size, size, 3)), layers.Conv2D(64, 3, padding="same",
                                                                   activation="relu")] + \
            [layers.Conv2D(64, 3, padding="same", activation="relu") for _ in range(depth - 1)] + \
            [layers.GlobalAveragePooling2D(), layers.Dense(10)]
        x = np.random.default_rng(0).normal(size=(batch, size, size, 3)).astype(np.float32)
    y = np.random.default_rng(1).integers(0, 10, len(x))
    return hiapi.Sequential(stack), x, y


def resident_bytes():
    """This process's resident set now (Linux), not its peak."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def one_run(model_name, mode, small, repeats):
    import hiapi
    from hiapi import losses
    model, x, y = build(model_name, small)
    before = resident_bytes()
    model.compile(optimizer=hiapi.optimizers.SGD(0.01),
                  loss=losses.SparseCategoricalCrossentropy(from_logits=True),
                  memory="sublinear" if mode == "sublinear" else None)
    if mode == "none":
        os.environ["HIAPI_MEMORY"] = "none"
    model.train_on_batch(x, y)                       # compile + first step
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        model.train_on_batch(x, y)
        times.append(time.perf_counter() - start)
    growth = resident_bytes() - before
    step = [f for key, f in model._step_functions.items() if key[0] == "train"][0]
    executable = list(step._executables.values())[-1]
    held = executable.plan.arena_bytes if executable.plan else sum(
        b.nbytes for b, (_, out, _, _, view) in
        zip([executable.buffers[s[1]] for s in executable.steps], executable.steps)
        if not view)
    from hiapi.graph.memory.cost import flops
    from hiapi.graph.memory.planner import plan_memory
    bounds = executable.plan or plan_memory(executable.order, executable.specs,
                                            [executable.order[i] for i in
                                             executable.output_slots])
    extra = sum(flops(v, executable.specs) for v in executable.order if v.recompute)
    roots = {executable.order[i] for i in executable.output_slots} | \
        {executable.order[i] for _, i, _ in executable.update_slots}
    root_bytes = sum(int(np.prod(executable.specs[v].shape)) * executable.specs[v].dtype.itemsize
                     for v in roots if not v.op.is_source)
    return {"model": model_name, "mode": mode, "planned_bytes": executable.plan.arena_bytes
            if executable.plan else None, "held_bytes": int(held),
            "activation_bytes": int(held) - root_bytes,   # less new weights and outputs
            "lower_bound_bytes": bounds.lower_bound, "upper_bound_bytes": bounds.upper_bound,
            "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            "rss_growth_bytes": growth, "rss_growth_over_held": round(growth / max(held, 1), 3),
            "step_seconds_median": float(np.median(times)),
            "step_seconds_min_max": [min(times), max(times)],
            "recomputed_gflop": extra / 1e9, "pass_stats": step.pass_stats}


def conv_chain_compile_seconds(n):
    """Build, optimize and plan a chain of ``n`` convolutions (MegBrain's 10,000-conv table)."""
    from hiapi.graph import Function, ops, placeholder
    start = time.perf_counter()
    x = placeholder((1, 8, 8, 4))
    w = ops.constant(np.full((3, 3, 4, 4), 0.01, np.float32))
    h = x
    for _ in range(n):
        h = ops.conv2d(h, w, padding="same")
    f = Function([x], h)
    executable = f.executable(((1, 8, 8, 4),))
    return time.perf_counter() - start, executable.plan.arena_bytes, executable.plan.lower_bound


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--child", nargs=2, metavar=("MODEL", "MODE"))
    args = parser.parse_args()
    if args.child:
        print(json.dumps(one_run(*args.child, args.small, args.repeats)))
        return
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": str(1 << 16), "PYTHONUNBUFFERED": "1"}
    for model in ("mlp", "cnn"):
        results = {}
        for mode in ("none", "plan", "sublinear"):
            command = [sys.executable, __file__, "--child", model, mode,
                       "--repeats", str(args.repeats)] + (["--small"] if args.small else [])
            out = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
            results[mode] = json.loads(out.stdout.strip().splitlines()[-1])
        base = results["plan"]
        for mode, r in results.items():
            r["held_over_plan"] = round(r["held_bytes"] / base["held_bytes"], 3)
            r["plan_activations_over_this"] = round(base["activation_bytes"] /
                                                    max(r["activation_bytes"], 1), 2)
            r["plan_over_lower_bound"] = round(r["held_bytes"] / r["lower_bound_bytes"], 3)
            r["step_time_over_plan"] = round(r["step_seconds_median"] /
                                             base["step_seconds_median"], 3)
            print(json.dumps(r), flush=True)
    seconds, arena, lower = conv_chain_compile_seconds(1000 if args.small else 10_000)
    print(json.dumps({"benchmark": "conv_chain_compile", "convolutions": 1000 if args.small
                      else 10_000, "compile_and_plan_seconds": round(seconds, 2),
                      "arena_bytes": arena, "lower_bound_bytes": lower}), flush=True)


if __name__ == "__main__":
    main()
