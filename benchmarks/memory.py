"""Memory planning, measured: one training step of two activation-heavy models under
(a) no planning (every value its own buffer), (b) the static plan, (c) the plan with sublinear
recomputation, on each backend; plus the compile-and-plan time of a 10,000-convolution chain.

    python benchmarks/memory.py                 # full size (tens of minutes, ~10 GB peak)
    python benchmarks/memory.py --small         # a quick check
    python benchmarks/memory.py --models mlp --modes plan sublinear --repeats 1
                                                # the issue #15 table (64 x Dense(1024))

Each (backend, model, mode) runs in its own process with MALLOC_MMAP_THRESHOLD_ fixed, so its
resident set is its own and glibc's caching does not blur it. Prints one JSON line per run:
``memory_report()``'s rows (activations, kernel scratch, parameters, optimizer state, the
executor's copies, total), the resident-set growth from before the model was built to after
the steps (``rss_growth_bytes``; what the report's total promises) and its peak, the lower and
upper bounds, median step time, and ratios against (b) of the same backend and model; then a
table of planned against measured for every run; then, under ``mpiexec`` at 2 and 4 ranks, the
per-rank optimizer bytes and resident-set growth with and without
``Strategy(shard_optimizer_state=True)`` (``benchmarks/sharded_state.py`` has the full run).
"""
import argparse
import ctypes
import gc
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
    """This process's resident set now (Linux), not its peak, once garbage is collected and
    glibc has given its free heap back."""
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak_bytes():
    """Peak resident set since the last ``reset_peak`` (VmHWM)."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM"))


def reset_peak():
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def one_run(model_name, mode, small, repeats, backend="numpy"):
    import hiapi
    from hiapi import losses
    from hiapi.graph.memory.report import memory_rows
    hiapi.backends.set_backend(backend)
    warm, x, y = build(model_name, True)        # imports and numba's compilation: not a step's
    warm.compile(optimizer=hiapi.optimizers.SGD(0.01),
                 loss=losses.SparseCategoricalCrossentropy(from_logits=True),
                 memory="sublinear" if mode == "sublinear" else None)
    warm.train_on_batch(x, y)
    del warm, x, y
    before = resident_bytes()
    model, x, y = build(model_name, small)
    before += x.nbytes + y.nbytes                # the user's data, not the step's memory
    reset_peak()
    model.compile(optimizer=hiapi.optimizers.SGD(0.01),
                  loss=losses.SparseCategoricalCrossentropy(from_logits=True),
                  memory="sublinear" if mode == "sublinear" else None)
    if mode == "none":
        os.environ["HIAPI_MEMORY"] = "none"
    start = time.perf_counter()
    model.train_on_batch(x, y)                       # compile + first step
    times = [time.perf_counter() - start]            # the step time when repeats is 0
    for _ in range(repeats):
        start = time.perf_counter()
        model.train_on_batch(x, y)
        times.append(time.perf_counter() - start)
    times = times[1:] or times
    growth = resident_bytes() - before
    peak_growth = peak_bytes() - before
    step = [f for key, f in model._step_functions.items() if key[0] == "train"][0]
    executable = list(step._executables.values())[-1]
    rows = memory_rows(executable, model)
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
    return {"backend": backend, "model": model_name, "mode": mode, "report_rows": rows,
            "rss_growth_over_report": round(growth / rows["total"], 3),
            "peak_rss_growth_bytes": peak_growth,
            "planned_bytes": executable.plan.arena_bytes
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
    parser.add_argument("--backends", nargs="+", default=["numpy", "numba"])
    parser.add_argument("--models", nargs="+", default=["mlp", "cnn"])
    parser.add_argument("--modes", nargs="+", default=["none", "plan", "sublinear"])
    parser.add_argument("--no-chain", action="store_true", help="skip the 10,000-conv chain")
    parser.add_argument("--sharded", default="2,4",
                        help="rank counts for the sharded optimizer-state rows ('' to skip)")
    parser.add_argument("--child", nargs=3, metavar=("MODEL", "MODE", "BACKEND"))
    args = parser.parse_args()
    if args.child:
        model, mode, backend = args.child
        print(json.dumps(one_run(model, mode, args.small, args.repeats, backend)))
        return
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": str(1 << 20), "PYTHONUNBUFFERED": "1"}
    table = []
    for backend, model in [(b, m) for b in args.backends for m in args.models]:
        results = {}
        for mode in args.modes:
            command = [sys.executable, __file__, "--child", model, mode, backend,
                       "--repeats", str(args.repeats)] + (["--small"] if args.small else [])
            out = subprocess.run(command, capture_output=True, text=True, env=env)
            if out.returncode:
                sys.exit(f"{' '.join(command[1:])} failed:\n{out.stderr}")
            results[mode] = json.loads(out.stdout.strip().splitlines()[-1])
        base = results.get("plan", next(iter(results.values())))
        table += results.values()
        for mode, r in results.items():
            r["held_over_plan"] = round(r["held_bytes"] / base["held_bytes"], 3)
            r["plan_activations_over_this"] = round(base["activation_bytes"] /
                                                    max(r["activation_bytes"], 1), 2)
            r["plan_over_lower_bound"] = round(r["held_bytes"] / r["lower_bound_bytes"], 3)
            r["step_time_over_plan"] = round(r["step_seconds_median"] /
                                             base["step_seconds_median"], 3)
            print(json.dumps(r), flush=True)
    print_table(table)
    if args.sharded:                    # per-rank bytes under Strategy(shard_optimizer_state)
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import sharded_state
        for ranks in map(int, args.sharded.split(",")):
            rows = {sharded: sharded_state.run(ranks, sharded, 5, args.small)
                    for sharded in (False, True)}
            for sharded, records in rows.items():
                print(json.dumps({
                    "benchmark": "sharded_optimizer_state", "ranks": ranks, "sharded": sharded,
                    "optimizer_mib_per_rank": [round(r["optimizer_bytes"] / 2**20, 2)
                                               for r in records],
                    "rss_growth_mib_per_rank": [round(r["rss_growth"] / 2**20, 1)
                                                for r in records]}), flush=True)
    if args.no_chain:
        return
    seconds, arena, lower = conv_chain_compile_seconds(1000 if args.small else 10_000)
    print(json.dumps({"benchmark": "conv_chain_compile", "convolutions": 1000 if args.small
                      else 10_000, "compile_and_plan_seconds": round(seconds, 2),
                      "arena_bytes": arena, "lower_bound_bytes": lower}), flush=True)


def print_table(runs):
    """Planned (``memory_report()``'s rows) against measured resident-set growth, in MiB; the
    last columns leave the weights out (issue #15's table: growth over the weights)."""
    mib = lambda n: f"{n / 2**20:.0f}"                                        # noqa: E731
    print("| backend | model | mode | activations | scratch | parameters | optimizer | executor "
          "| report total | RSS growth | growth / total | report less weights | RSS growth "
          "over the weights |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in runs:
        rows = r["report_rows"]
        print(f"| {r['backend']} | {r['model']} | {r['mode']} | {mib(rows['activations'])} | "
              f"{mib(rows['scratch'])} | {mib(rows['parameters'])} | "
              f"{mib(rows['optimizer_state'])} | {mib(rows['executor'])} | {mib(rows['total'])} "
              f"| {mib(r['rss_growth_bytes'])} | {r['rss_growth_over_report']:.3f} | "
              f"{mib(rows['total'] - rows['parameters'])} | "
              f"{mib(r['rss_growth_bytes'] - rows['parameters'])} |", flush=True)
    for backend, model in sorted({(r["backend"], r["model"]) for r in runs}):
        growth = {r["mode"]: r["rss_growth_bytes"] - r["report_rows"]["parameters"]
                  for r in runs if (r["backend"], r["model"]) == (backend, model)}
        if "plan" in growth and "sublinear" in growth:
            print(f"{backend} {model}: over the weights, sublinear grows "
                  f"{growth['plan'] / growth['sublinear']:.2f}x less than the default plan "
                  f"(measured)", flush=True)


if __name__ == "__main__":
    main()
