"""Several MPI ranks on one node: does each rank's train step stay fast?

    python benchmarks/ranks_per_node.py [--ranks 2] [--rounds 3] [--steps 20] [--backend numba]

Runs the MLP 784-1024-1024-10 (batch 256, SGD with momentum) train step, each process timing
its own steps (no communication, so only the sharing of the cores is measured):

    single, 1 thread    one process, HIAPI_NUM_THREADS=1: the target for each rank
    hiapi ranks         ``mpiexec -n RANKS``, hiapi's defaults (the thread budget divides the
                        node's CPUs between its ranks)
    hiapi ranks, old    ``mpiexec -n RANKS`` with every rank on all CPUs and OpenBLAS spinning
                        (HIAPI_NUM_THREADS=<CPUs>, OPENBLAS_THREAD_TIMEOUT=28): hiapi before
                        the thread budget
    torch ranks         ``mpiexec -n RANKS``, torch's defaults (needs ``pip install torch``)

Configurations are interleaved round by round. Ranks start timing together (a barrier) and every
rank's step times are pooled. One JSON line per configuration: median, min-max, and the ratio to
the single 1-thread process; the target is hiapi ranks / single <= 1.25 and <= torch ranks.
"""
import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS", "MKL_NUM_THREADS",
               "OPENBLAS_THREAD_TIMEOUT", "HIAPI_NUM_THREADS")


def worker(framework, steps):
    """Time ``steps`` MLP steps in this process; rank 0 prints every rank's times."""
    from mpi4py import MPI
    import train_step
    step = train_step.torch_step("mlp") if framework == "torch" else \
        train_step.hiapi_step("mlp", framework)
    if framework == "torch":
        import torch
        torch.set_num_threads(int(os.environ.get("TORCH_THREADS", "0")) or
                              torch.get_num_threads())
    for _ in range(3):
        step()
    comm = MPI.COMM_WORLD
    comm.Barrier()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    everything = comm.gather(times, root=0)
    if comm.Get_rank() == 0:
        print(json.dumps({"times": [t for ts in everything for t in ts]}), flush=True)


def launcher():
    beside = Path(sys.executable).parent / "mpiexec"
    return str(beside) if beside.exists() else "mpiexec"


def configurations(ranks, backend):
    cpus = str(len(os.sched_getaffinity(0)))
    torch_threads = _torch_default_threads()
    return {
        "single, 1 thread": ([], backend, {"HIAPI_NUM_THREADS": "1"}),
        "hiapi ranks": ([launcher(), "-n", str(ranks)], backend, {}),
        "hiapi ranks, old": ([launcher(), "-n", str(ranks)], backend,
                             {"HIAPI_NUM_THREADS": cpus, "OPENBLAS_THREAD_TIMEOUT": "28"}),
        "torch ranks": ([launcher(), "-n", str(ranks)], "torch",
                        {"TORCH_THREADS": str(torch_threads)}),
    }


def _torch_default_threads():
    """torch's own default in a fresh process (what each rank would use)."""
    out = subprocess.run([sys.executable, "-c", "import torch; print(torch.get_num_threads())"],
                         capture_output=True, text=True)
    return int(out.stdout.strip() or 0)


def run(prefix, framework, extra, steps):
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARS}
    env.update(extra)
    out = subprocess.run([*prefix, sys.executable, __file__, "--worker", framework,
                          "--steps", str(steps)], capture_output=True, text=True, env=env,
                         timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(prefix)} {framework} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])["times"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--backend", default="numba")
    parser.add_argument("--worker")
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.steps)
        return
    if importlib.util.find_spec("mpi4py") is None:      # each rank needs it: say so first
        sys.exit("ranks_per_node.py runs ranks under mpiexec: install the mpi extra "
                 "(pip install -e '.[mpi]'; it is in dev)")
    configs = configurations(args.ranks, args.backend)
    times = {name: [] for name in configs}
    for _ in range(args.rounds):
        for name, (prefix, framework, extra) in configs.items():
            times[name] += run(prefix, framework, extra, args.steps)
    single = float(np.median(times["single, 1 thread"]))
    for name, t in times.items():
        median = float(np.median(t))
        print(json.dumps({"configuration": name, "ranks": 1 if name.startswith("single")
                          else args.ranks, "backend": configs[name][1],
                          "median_ms": round(1e3 * median, 2),
                          "min_max_ms": [round(1e3 * min(t), 2), round(1e3 * max(t), 2)],
                          "over_single_1_thread": round(median / single, 2),
                          "steps_timed": len(t)}), flush=True)


if __name__ == "__main__":
    main()
