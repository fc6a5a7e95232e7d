"""Allreduce time per algorithm against MPI's native one, 4 KB to 64 MB, at 2 and 4 ranks.

    .venv/bin/python benchmarks/allreduce.py                 # launches mpiexec -n 2 and -n 4
    .venv/bin/python benchmarks/allreduce.py --ranks 2 --rounds 9

Each size is measured in ``--rounds`` rounds; a round times every algorithm once (a few calls
back to back after a barrier), in a shuffled order, so a burst of load from other processes
falls on all of them alike. Every algorithm reduces the same array, allocated in MPI shared
memory (``MPICommunicator.shared_array``) as the strategy's gradient buckets are when
``zero_copy`` may run, so the ``zero_copy`` column times the path a training step uses;
``native_private`` is MPI's allreduce on a plain numpy array, to show the reference is not
slowed by the shared memory. Rank 0 prints one JSON line per size: the median seconds of each
algorithm over the rounds, its ratio to native in the same rounds (median of the per-round
ratios), what ``auto`` picked, the times its tuner measured for the size class (native and the
model's best two, agreed over ranks) and every candidate's predicted seconds, and the load
average; before them the measured model constants; then a table of the ratios.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ALGORITHMS = ("native", "ring", "halving_doubling", "shared_memory", "shared_direct",
              "zero_copy", "hierarchical", "auto")
COLUMNS = ALGORITHMS + ("native_private",)
SIZES = [4 << 10 << (2 * i) for i in range(8)]          # 4 KB ... 64 MB


def time_calls(comm, array, calls):
    comm.barrier()
    start = time.perf_counter()
    for _ in range(calls):
        comm.allreduce(array)
    return (time.perf_counter() - start) / calls


def worker(rounds):
    from hiapi.distribute import MPICommunicator
    from hiapi.distribute.algorithms.tuner import size_class
    comms = {name: MPICommunicator(algorithm=name) for name in ALGORITHMS}
    native = comms["native"]
    shared = comms["zero_copy"].shared_array(SIZES[-1] // 4, np.float32)
    shuffle = random.Random(0)                             # the same order on every rank
    if native.rank == 0:
        print(json.dumps({"costs": comms["auto"].allreducer.costs.as_dict()}), flush=True)
    for nbytes in SIZES:
        array = shared[:nbytes // 4]             # zeros: ones would overflow to inf by round 128
        private = np.zeros(nbytes // 4, np.float32)
        arrays = {**{name: array for name in ALGORITHMS}, "native_private": private}
        comms["native_private"] = native
        calls = max(1, min(50, (4 << 20) // nbytes))
        for name in COLUMNS:                               # warm-up (buffers, caches, and
            comms[name].allreduce(arrays[name])            # auto's tuning of this class)
        times = {name: [] for name in COLUMNS}
        for _ in range(rounds):
            order = list(COLUMNS)
            shuffle.shuffle(order)
            for name in order:
                times[name].append(time_calls(comms[name], arrays[name], calls))
        if native.rank == 0:
            ratios = {name: float(np.median(np.divide(times[name], times["native"])))
                      for name in COLUMNS if name != "native"}
            print(json.dumps({
                "benchmark": "allreduce", "ranks": native.size, "bytes": nbytes,
                "seconds": {n: float(np.median(t)) for n, t in times.items()},
                "over_native": {n: round(r, 3) for n, r in ratios.items()},
                "auto_picked": comms["auto"].allreducer.choose(nbytes).name,
                "tuned": comms["auto"].allreducer.measured[size_class(nbytes)],
                "tuning_rounds": comms["auto"].allreducer.rounds[size_class(nbytes)],
                "predicted": comms["auto"].allreducer.predictions(nbytes),
                "loadavg": os.getloadavg()[0]}), flush=True)


def table(lines):
    print(f"{'ranks':>5} {'bytes':>9} " + " ".join(f"{n[:12]:>12}" for n in COLUMNS[1:]) +
          f" {'auto picks':>16} {'load':>5}")
    for row in lines:
        print(f"{row['ranks']:>5} {row['bytes']:>9} " +
              " ".join(f"{row['over_native'][n]:>12.2f}" for n in COLUMNS[1:]) +
              f" {row['auto_picked']:>16} {row['loadavg']:>5.1f}")


def launch(ranks, rounds):
    here = Path(sys.executable).parent
    launcher = str(here / "mpiexec") if (here / "mpiexec").exists() else "mpiexec"
    result = subprocess.run([launcher, "-n", str(ranks), sys.executable, __file__, "--worker",
                             "--rounds", str(rounds)], capture_output=True, text=True,
                            env={**os.environ, "OMP_NUM_THREADS": "1"})
    if result.returncode:
        raise SystemExit(f"mpiexec -n {ranks} failed:\n{result.stderr[-3000:]}")
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    print(json.dumps({"ranks": ranks, **lines[0]}), flush=True)
    return lines[1:]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, nargs="*", default=[2, 4])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args.rounds)
    rows = []
    for ranks in args.ranks:
        for row in launch(ranks, args.rounds):
            print(json.dumps(row), flush=True)
            rows.append(row)
    table(rows)


if __name__ == "__main__":
    main()
