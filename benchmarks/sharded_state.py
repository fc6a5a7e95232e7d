"""Sharded optimizer state (ZeRO stage 2, ``Strategy(shard_optimizer_state=True)``) against plain
data parallelism, under a real ``mpiexec``: bytes per rank and step time.

    python benchmarks/sharded_state.py [--ranks 2,4] [--rounds 3] [--steps 20] [--small]

Model: an MLP of 8 x Dense(1024) (8.4 M parameters, 34 MB), Adam, batch 64 per rank: Adam's two
slots per parameter are twice the weights, the memory ZeRO exists to divide. Each (ranks,
sharded) configuration runs in its own ``mpiexec``, interleaved round by round. One JSON line per
configuration: per-rank optimizer-state bytes (what the optimizer holds, and the "optimizer
state" of ``model.memory_report()``), the resident-set growth of each rank during training (at
the last step, before the end of ``fit`` gathers the state onto rank 0 for saving; the process,
not what the code believes), the median step time, and the ratios against the unsharded run
with the same number of ranks.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "HIAPI_NUM_THREADS": "1",
       "MALLOC_MMAP_THRESHOLD_": "1048576", "PYTHONUNBUFFERED": "1"}


def resident_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def worker(sharded, steps, small):
    import hiapi
    from hiapi import layers
    from hiapi.callbacks import Callback
    width, depth = (256, 4) if small else (1024, 8)
    strategy = hiapi.distribute.Strategy(shard_optimizer_state=sharded)
    before = resident_bytes()
    with strategy.scope():
        hiapi.utils.set_random_seed(0)
        model = hiapi.Sequential([hiapi.Input(shape=(width,))] +
                                 [layers.Dense(width, activation="relu") for _ in range(depth)] +
                                 [layers.Dense(10)])
        model.compile(optimizer=hiapi.optimizers.Adam(1e-4),
                      loss=hiapi.losses.SparseCategoricalCrossentropy(from_logits=True))
    rng = np.random.default_rng(strategy.rank)
    batch = 64
    x = rng.normal(size=(batch * strategy.size * (steps + 3), width)).astype("float32")
    y = rng.integers(0, 10, len(x))

    class StepTimes(Callback):
        def on_train_batch_begin(self, batch, logs=None):
            self.start = time.perf_counter()

        def on_train_batch_end(self, batch, logs=None):
            self.times.append(time.perf_counter() - self.start)
            self.rss = resident_bytes()       # while training (rank 0 gathers after fit)
    timer = StepTimes()
    timer.times = []
    model.fit(x, y, batch_size=batch, epochs=1, verbose=0, shuffle=False, callbacks=[timer])
    optimizer = model.optimizer
    record = {"rank": strategy.rank,
              "optimizer_bytes": int(sum(v.numpy().nbytes for v in optimizer.variables)),
              "weight_bytes": int(sum(v.numpy().nbytes for v in model.weights)),
              "rss_growth": timer.rss - before,
              "step_times": timer.times[3:]}
    everyone = strategy.communicator.comm.gather(record, root=0) \
        if strategy.size > 1 else [record]
    if strategy.rank == 0:
        print("RESULT " + json.dumps(everyone), flush=True)


def run(ranks, sharded, steps, small):
    launcher = str(Path(sys.executable).parent / "mpiexec")
    command = [launcher, "-n", str(ranks), sys.executable, __file__, "--worker",
               str(int(sharded)), "--steps", str(steps)] + (["--small"] if small else [])
    result = subprocess.run(command, capture_output=True, text=True, timeout=900,
                            env={**os.environ, **ENV})
    for line in result.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise RuntimeError(f"{' '.join(command)} failed:\n{result.stdout[-2000:]}\n"
                       f"{result.stderr[-2000:]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", default="2,4")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--small", action="store_true")
    parser.add_argument("--worker", type=int, choices=(0, 1))
    args = parser.parse_args()
    if args.worker is not None:
        return worker(bool(args.worker), args.steps, args.small)
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    for ranks in map(int, args.ranks.split(",")):
        pooled = {False: [], True: []}
        for _ in range(args.rounds):
            for sharded in (False, True):
                pooled[sharded].append(run(ranks, sharded, args.steps, args.small))
        rows = {}
        for sharded, rounds in pooled.items():
            last = rounds[-1]
            times = [t for records in rounds for r in records for t in r["step_times"]]
            rows[sharded] = {
                "ranks": ranks, "sharded": sharded,
                "weight_bytes": last[0]["weight_bytes"],
                "optimizer_bytes_per_rank": [r["optimizer_bytes"] for r in last],
                "rss_growth_mib_per_rank": [round(r["rss_growth"] / 2**20, 1) for r in last],
                "step_ms_median": round(1000 * statistics.median(times), 2),
                "step_ms_min_max": [round(1000 * min(times), 2), round(1000 * max(times), 2)],
                "load_average": load}
        for sharded in (False, True):
            row = rows[sharded]
            base = rows[False]
            row["optimizer_bytes_ratio"] = round(
                max(row["optimizer_bytes_per_rank"]) / max(base["optimizer_bytes_per_rank"]), 3)
            row["rss_growth_ratio"] = round(
                max(row["rss_growth_mib_per_rank"]) / max(base["rss_growth_mib_per_rank"]), 3)
            row["step_time_ratio"] = round(row["step_ms_median"] / base["step_ms_median"], 3)
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
